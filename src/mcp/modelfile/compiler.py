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

from mcp.modelfile.spec import (
    BLOCK_ENCODINGS,
    ArchitectureConfig,
    Lineage,
    ModelHeader,
    PrecisionPlan,
    TensorSpec,
    TokenizerSpec,
)
from mcp.modelfile.writer import write_model
from mcp.runtime.errors import ConfigError, ModelFormatError, ModelNotFoundError, UnsupportedModelError

TensorValue = np.ndarray | torch.Tensor

# precision -> (encoding stored, torch dtype); "source" keeps each tensor's own encoding.
PRECISION_ENCODINGS = {
    "fp32": ("f32", torch.float32),
    "f16": ("f16", torch.float16),
    "bf16": ("bf16", torch.bfloat16),
}
PRECISION_CHOICES = ("source", *PRECISION_ENCODINGS)
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
    precision: str = "source",
    name: str | None = None,
    license: str | None = None,
) -> ModelHeader:
    """Compile ``src`` (a ``.gguf`` file or an HF folder) to the ``.mcp`` file ``out``.

    ``precision`` "source" keeps every tensor's encoding (GGUF blocks stay blocks);
    "fp32", "f16" or "bf16" converts every tensor, dequantizing blocks. Returns the header
    written. The output appears only when complete.
    """
    src, out = Path(src), Path(out)
    if precision not in PRECISION_CHOICES:
        raise ConfigError(f"precision {precision!r} is not one of {', '.join(PRECISION_CHOICES)}")
    _check_output(src, out)
    source = load_source(src)
    check_tensors(src, source)
    header = _header(source, precision, name, license)
    tensors = LazyTensors({t.name: _converter(t, precision) for t in source.tensors})
    return write_model(out, header, tensors)


def load_source(src: Path) -> SourceModel:
    """Read a GGUF file or a Hugging Face folder."""
    if src.is_dir():
        from mcp.modelfile.hf_source import load_hf_folder

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
    from mcp.modelfile.gguf_source import load_gguf

    return load_gguf(src)


def expected_tensor_shapes(arch: ArchitectureConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a ``.mcp`` of this architecture holds, with its logical shape, in order."""
    hidden, hd = arch.hidden_size, arch.head_dim
    q_rows, kv_rows = arch.num_attention_heads * hd, arch.num_kv_heads * hd
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (arch.vocab_size, hidden)}
    for i in range(arch.num_layers):
        layer = f"model.layers.{i}"
        shapes[f"{layer}.input_layernorm.weight"] = (hidden,)
        for proj, rows in (("q", q_rows), ("k", kv_rows), ("v", kv_rows)):
            shapes[f"{layer}.self_attn.{proj}_proj.weight"] = (rows, hidden)
            if arch.attention_bias:
                shapes[f"{layer}.self_attn.{proj}_proj.bias"] = (rows,)
        shapes[f"{layer}.self_attn.o_proj.weight"] = (hidden, q_rows)
        shapes[f"{layer}.post_attention_layernorm.weight"] = (hidden,)
        shapes[f"{layer}.mlp.gate_proj.weight"] = (arch.intermediate_size, hidden)
        shapes[f"{layer}.mlp.up_proj.weight"] = (arch.intermediate_size, hidden)
        shapes[f"{layer}.mlp.down_proj.weight"] = (hidden, arch.intermediate_size)
    shapes["model.norm.weight"] = (hidden,)
    if not arch.tie_word_embeddings:
        shapes["lm_head.weight"] = (arch.vocab_size, hidden)
    if arch.rope_scaling is not None and arch.rope_scaling.kind == "freq_factors":
        shapes["model.rope_freqs"] = (hd // 2,)
    return shapes


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


def _header(source: SourceModel, precision: str, name: str | None, license: str | None) -> ModelHeader:
    order = list(expected_tensor_shapes(source.architecture))
    by_name = {t.name: t for t in source.tensors}
    specs = tuple(
        TensorSpec(n, _target_encoding(by_name[n], precision), by_name[n].shape, sha256="")
        for n in order
    )
    lineage = Lineage(
        source_name=source.name,
        source_sha256=source.sha256,
        source_format=source.format,
        compiler_version=compiler_version(),
        recipe={"precision": precision, **source.recipe},
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        license=license or source.license,
        base_model=source.base_model,
    )
    return ModelHeader(
        name=name or Path(source.name).stem,
        architecture=source.architecture,
        tokenizer=source.tokenizer,
        tensors=specs,
        precision_plan=PrecisionPlan(default="fp32"),
        lineage=lineage,
    )


def _target_encoding(tensor: SourceTensor, precision: str) -> str:
    return tensor.encoding if precision == "source" else PRECISION_ENCODINGS[precision][0]


def _converter(tensor: SourceTensor, precision: str) -> Callable[[], TensorValue]:
    if _target_encoding(tensor, precision) == tensor.encoding:
        return tensor.load
    dtype = PRECISION_ENCODINGS[precision][1]
    return lambda: to_dense(tensor).to(dtype)


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
