"""Compile a GGUF file or a Hugging Face folder into a ``.mcp`` file.

A source (``gguf_source``, ``hf_source``) turns its input into a ``SourceModel``: the
architecture, the tokenizer, and one ``SourceTensor`` per ``.mcp`` tensor (Hugging Face
Llama names, torch ``Linear`` layout, Q/K rows in rotate_half order) that loads its stored
representation lazily. The compiler checks the tensor set against the architecture,
converts each tensor to the requested precision while the writer streams it out, and
records the lineage.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

from mcp.base.errors import ConfigError, ModelFormatError, ModelNotFoundError, UnsupportedModelError
from mcp.engine.kernels import BLOCK_KINDS
from mcp.engine.quant.int4pack import (
    GROUP_SIZE,
    INT4_SOURCES,
    QPARAMS_DTYPES,
    can_pack,
    codes_from_blocks,
    kernel_scale_and_zero,
    pack,
    stored_qparams,
)
from mcp.engine.quant.int8 import codes_from_q8_0
from mcp.compiler.progress import CountedTensors, ProgressCallback, ProgressEvent, silent
from mcp.modelfile.lineage_file import DeclaredLineage
from mcp.modelfile.moe import is_router
from mcp.modelfile.spec import (
    BLOCK_ENCODINGS,
    DENSE_ENCODINGS,
    INT4_ENCODING,
    INT8_ENCODING,
    QPARAMS_SUFFIX,
    SCALE_ZERO_SUFFIX,
    ArchitectureConfig,
    Lineage,
    ModelHeader,
    PrecisionPlan,
    TensorSpec,
    TokenizerSpec,
)
from mcp.modelfile.validate import check_header, expected_tensor_shapes
from mcp.modelfile.writer import write_model

TensorValue = np.ndarray | torch.Tensor

# precision -> (encoding stored, torch dtype); "source" keeps each tensor's own encoding.
PRECISION_ENCODINGS = {
    "fp32": ("f32", torch.float32),
    "f16": ("f16", torch.float16),
    "bf16": ("bf16", torch.bfloat16),
}
# "auto" writes what the runtime's auto plan runs, so that loading converts nothing: Q8_0
# blocks as grouped int8 (codes and fp16 scales: 8.5 bits a weight, as the GGUF), Q4_0/Q4_1/
# Q4_K/Q5_0/Q5_1/Q5_K/Q6_K matrices as their GGUF blocks (exact; the native kernels read them
# as they are, so the file holds the GGUF's bytes and nothing beside them), other matrices as
# bf16. "int4" is "auto" but with 4-bit matrices as packed int4 (codes, f32 or f16 scale/
# offset and PyTorch's int4pack kernel's bf16 scale_zero: 6-7 bits a weight for Q4_K, 5-6 for
# Q4_0/Q4_1), opt-in for a file meant for that kernel (CUDA-less CPUs without the native
# build) to load without converting; a plan without the native kernels re-lays 4-bit blocks
# as int4 at load otherwise.
PRECISION_CHOICES = ("auto", "source", "int4", *PRECISION_ENCODINGS)
SENSITIVE = ("model.embed_tokens.weight", "lm_head.weight")
PACKED_LAYOUT = "rows"
"""The byte order packed int4 matrices are written in: the native kernels' (``rows``), whatever
machine compiles. A file is data: the same source and recipe give the same bytes on every CPU,
and an engine without the native kernels repacks to its torch layout at load (engine/weights.py)."""
_QPARAMS_ENCODINGS = {source: "f16" if dtype == torch.float16 else "f32" for source, dtype in QPARAMS_DTYPES.items()}
_BLOCK_QTYPES = {encoding: GGMLQuantizationType[encoding.upper()] for encoding in BLOCK_ENCODINGS}


@dataclass(frozen=True)
class SourceTensor:
    """One ``.mcp`` tensor as a source holds it: ``load()`` returns the stored representation."""

    name: str
    encoding: str
    shape: tuple[int, ...]  # logical, torch Linear layout: (out, in)
    load: Callable[[], TensorValue]


@dataclass(frozen=True)
class SourceModel:
    """What a source file or folder yields, ready to be written as ``.mcp``."""

    name: str
    format: str  # "gguf" | "hf-safetensors"
    sha256: str
    architecture: ArchitectureConfig
    tokenizer: TokenizerSpec
    tensors: tuple[SourceTensor, ...]
    license: str | None = None
    base_model: str | None = None
    recipe: dict[str, str] = field(default_factory=dict)


def compile_model(
    src: str | os.PathLike,
    out: str | os.PathLike,
    precision: str = "auto",
    name: str | None = None,
    license: str | None = None,
    declared: DeclaredLineage = DeclaredLineage(),
    progress: ProgressCallback = silent,
) -> ModelHeader:
    """Compile ``src`` (a ``.gguf`` file or an HF folder) to the ``.mcp`` file ``out``.

    ``precision`` "auto" stores tensors as the runtime's auto plan runs them (GGUF's 4/5/6-bit
    blocks as stored, Q8_0 as grouped int8, other matrices bf16); "int4" the same but 4-bit
    blocks as packed int4 (exactly, plus the torch kernel's bf16 copy); "source" keeps every tensor's
    encoding (GGUF blocks stay blocks); "fp32", "f16" or "bf16" converts every tensor,
    dequantizing blocks. ``declared`` adds data lineage (datasets) and may name the base
    model and license. ``progress`` hears of each tensor converted (``mcp.compiler.progress``;
    silent by default). Returns the header written. The output appears only when complete.
    """
    src, out = Path(src), Path(out)
    if precision not in PRECISION_CHOICES:
        raise ConfigError(f"precision {precision!r} is not one of {', '.join(PRECISION_CHOICES)}")
    _check_output(src, out)
    progress(ProgressEvent("compile", f"reading {src.name}", 0))
    source = load_source(src)
    check_tensors(src, source)
    header = _header(source, precision, name, license, declared)
    check_header(header, str(src))  # what open_model will check: never write a file it refuses
    loaders = {}
    for tensor in source.tensors:
        loaders.update(_loaders(tensor, _target_encoding(tensor, precision)))
    tensors = CountedTensors(LazyTensors(loaders), header.tensors, progress)
    written = write_model(out, header, tensors)
    tensors.finish(out.name)
    return written


def load_source(src: Path) -> SourceModel:
    """Read a GGUF file or a Hugging Face folder."""
    if src.is_dir():
        from mcp.compiler.hf_source import load_hf_folder

        return load_hf_folder(src)
    if not src.is_file():
        raise ModelNotFoundError(f"{src}: no such file or folder to compile")
    with open(src, "rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ModelFormatError(
            f"{src}: not a GGUF file (no GGUF magic); compile a .gguf file or a Hugging Face "
            "folder holding config.json, *.safetensors and tokenizer.json"
        )
    from mcp.compiler.gguf_source import load_gguf

    return load_gguf(src)


def check_tensors(src: Path, source: SourceModel) -> None:
    """The source's tensors must be exactly the architecture's, with the right shapes."""
    expected = expected_tensor_shapes(source.architecture)
    given = {t.name: t for t in source.tensors}
    extra = [name for name in given if name not in expected]
    if extra:
        raise UnsupportedModelError(
            f"{src}: tensors this engine has no place for: {', '.join(extra[:5])}"
            + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        )
    missing = [name for name in expected if name not in given]
    if missing:
        raise ModelFormatError(f"{src}: tensors missing: {', '.join(missing[:5])}")
    for name, shape in expected.items():
        if given[name].shape != shape:
            raise ModelFormatError(
                f"{src}: tensor {name} has shape {list(given[name].shape)}, the configuration "
                f"implies {list(shape)}"
            )


def _check_output(src: Path, out: Path) -> None:
    if not out.parent.is_dir():
        raise ConfigError(
            f"cannot write {out}: the folder {out.parent} does not exist; create it first "
            "or choose another output path"
        )
    if out.exists() and src.exists() and out.resolve() == src.resolve():
        raise ConfigError(f"the output {out} is the source itself; choose another output path")


def _header(source: SourceModel, precision: str, name: str | None, license: str | None,
            declared: DeclaredLineage) -> ModelHeader:
    order = list(expected_tensor_shapes(source.architecture))
    by_name = {t.name: t for t in source.tensors}
    specs = tuple(
        spec for n in order for spec in _specs(by_name[n], _target_encoding(by_name[n], precision))
    )
    lineage = Lineage(
        source_name=source.name,
        source_sha256=source.sha256,
        source_format=source.format,
        compiler_version=compiler_version(),
        recipe={"precision": precision, **source.recipe},
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        license=license or declared.license or source.license,
        base_model=declared.base_model or source.base_model,
        datasets=declared.datasets,
    )
    return ModelHeader(
        name=name or Path(source.name).stem,
        architecture=source.architecture,
        tokenizer=source.tokenizer,
        tensors=specs,
        precision_plan=PrecisionPlan(default=precision if precision in PRECISION_ENCODINGS else "auto"),
        lineage=lineage,
    )


def _target_encoding(tensor: SourceTensor, precision: str) -> str:
    if precision == "source" or len(tensor.shape) != 2 and precision in ("auto", "int4"):
        return tensor.encoding
    if precision in ("auto", "int4") and is_router(tensor.name) and tensor.encoding in DENSE_ENCODINGS:
        return tensor.encoding  # kept as the source has it, run in fp32 (modelfile/moe.py)
    if precision not in ("auto", "int4"):
        return PRECISION_ENCODINGS[precision][0]
    if precision == "int4" and tensor.encoding in INT4_SOURCES and can_pack(tensor.shape) and \
            tensor.name not in SENSITIVE:
        return INT4_ENCODING
    if tensor.encoding == "q8_0" and len(tensor.shape) == 2:
        return INT8_ENCODING
    if tensor.encoding in BLOCK_KINDS and len(tensor.shape) == 2:
        return tensor.encoding
    return "bf16" if tensor.encoding in BLOCK_ENCODINGS or tensor.encoding == "f32" else tensor.encoding


def _specs(tensor: SourceTensor, encoding: str) -> tuple[TensorSpec, ...]:
    """The header entries a source tensor becomes (an int4 tensor brings its qparams)."""
    rows, cols = tensor.shape[0], tensor.shape[-1]
    if encoding == INT8_ENCODING:  # Q8_0's fp16 scales, as they are
        return (TensorSpec(tensor.name, encoding, tensor.shape, sha256=""),
                TensorSpec(tensor.name + QPARAMS_SUFFIX, "f16", (rows, cols // GROUP_SIZE), sha256=""))
    if encoding != INT4_ENCODING:
        return (TensorSpec(tensor.name, encoding, tensor.shape, sha256=""),)
    return (
        TensorSpec(tensor.name, encoding, tensor.shape, sha256="", layout=PACKED_LAYOUT),
        TensorSpec(tensor.name + QPARAMS_SUFFIX, _QPARAMS_ENCODINGS[tensor.encoding], (rows, cols // GROUP_SIZE, 2),
                   sha256=""),
        TensorSpec(tensor.name + SCALE_ZERO_SUFFIX, "bf16", (cols // GROUP_SIZE, rows, 2), sha256=""),
    )


def _loaders(tensor: SourceTensor, encoding: str) -> dict[str, Callable[[], TensorValue]]:
    """name -> loader of the stored value, for each entry ``_specs`` gives the tensor."""
    if encoding == tensor.encoding:
        return {tensor.name: tensor.load}
    if encoding in (INT4_ENCODING, INT8_ENCODING):
        names = [spec.name for spec in _specs(tensor, encoding)]
        split = _SplitTensor(tensor, names, _int4_parts if encoding == INT4_ENCODING else _int8_parts)
        return {name: split.loader(name) for name in names}
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[encoding]
    return {tensor.name: lambda: to_dense(tensor).to(dtype)}


def _int4_parts(tensor: SourceTensor, blocks: torch.Tensor) -> list[torch.Tensor]:
    """A 4-bit GGUF tensor re-laid as packed int4: codes, qparams, the torch kernel's scale_zero."""
    codes, qparams = codes_from_blocks(blocks, tensor.encoding, tensor.shape)
    return [pack(codes, PACKED_LAYOUT), stored_qparams(qparams, tensor.encoding),
            kernel_scale_and_zero(qparams, torch.bfloat16)]


def _int8_parts(tensor: SourceTensor, blocks: torch.Tensor) -> list[torch.Tensor]:
    """A Q8_0 GGUF tensor split into int8 codes and its fp16 scales."""
    return list(codes_from_q8_0(blocks, tensor.shape))


class _SplitTensor:
    """Converts a source tensor into the parts its header entries name, once; the writer
    fetches each part once, so each is dropped as soon as it is written."""

    def __init__(self, tensor: SourceTensor, names: list[str],
                 split: Callable[[SourceTensor, torch.Tensor], list[torch.Tensor]]) -> None:
        self._tensor, self._names, self._split = tensor, names, split
        self._parts: dict[str, torch.Tensor] | None = None

    def loader(self, name: str) -> Callable[[], torch.Tensor]:
        return lambda: self._take(name)

    def _take(self, name: str) -> torch.Tensor:
        if self._parts is None:
            blocks = torch.from_numpy(np.array(self._tensor.load()))  # a writable copy of the mmap
            self._parts = dict(zip(self._names, self._split(self._tensor, blocks)))
        return self._parts.pop(name)


def to_dense(tensor: SourceTensor) -> torch.Tensor:
    """The tensor's values as a dense torch tensor of its logical shape (blocks dequantized)."""
    value = tensor.load()
    if tensor.encoding in BLOCK_ENCODINGS:
        values = dequantize(np.asarray(value), _BLOCK_QTYPES[tensor.encoding])
        return torch.from_numpy(values.reshape(tensor.shape))
    if isinstance(value, torch.Tensor):
        return value
    return torch.from_numpy(np.array(value))


class LazyTensors(Mapping[str, TensorValue]):
    """A mapping whose values are computed on access: the writer asks for each one once."""

    def __init__(self, loaders: Mapping[str, Callable[[], TensorValue]]) -> None:
        self._loaders = dict(loaders)

    def __getitem__(self, name: str) -> TensorValue:
        return self._loaders[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)


def compiler_version() -> str:
    try:
        return version("mcp2026")
    except PackageNotFoundError:
        return "unknown"
