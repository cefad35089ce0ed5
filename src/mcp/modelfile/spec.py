"""The ``.mcp`` header, version 1, as typed data (the byte layout is in docs/format.md).

A ``.mcp`` file is a safetensors file. Its ``__metadata__`` holds two string entries:
``"format"`` = ``"mcp"`` and ``"mcp.header"`` = the JSON of ``ModelHeader``. Tensors are
stored in the layout the runtime reads (see ``TensorSpec.encoding``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from mcp.base.errors import ModelFormatError

FORMAT_TAG = "mcp"
FORMAT_VERSION = 1
METADATA_FORMAT_KEY = "format"
METADATA_HEADER_KEY = "mcp.header"

# How a tensor's bytes are stored. Dense encodings hold the tensor as that dtype with its
# logical shape. GGUF block encodings hold the blocks unchanged as uint8 of shape
# [rows, row_bytes], where rows = prod(shape[:-1]) and row_bytes = shape[-1] // block * bytes.
DENSE_ENCODINGS = ("f32", "f16", "bf16")
BLOCK_ENCODINGS = {  # encoding -> (weights per block, bytes per block)
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
    "q8_0": (32, 34),
    "q4_k": (256, 144),
    "q5_k": (256, 176),
    "q6_k": (256, 210),
}
# Packed int4 (see mcp.engine.quant.int4pack): uint8 [N, K/2] codes in a CPU kernel's byte
# order (TensorSpec.layout), with two companions: "<name>.qparams" f32 [N, K/32, 2], each
# group's scale and offset (w = scale * q + offset, exact), and "<name>.scale_zero" bf16
# [K/32, N, 2], the same in the kernel's form (w = (q - 8) * scale + zero), read at run time.
# In the "rows" layout (the native kernels', mcp.engine.kernels) each row holds K/32 groups
# of 16 bytes in GGUF's Q4_0/Q4_1 nibble order.
INT4_ENCODING = "int4"
QPARAMS_SUFFIX = ".qparams"
SCALE_ZERO_SUFFIX = ".scale_zero"
# Grouped int8 (GGUF's Q8_0, exactly): int8 [N, K] codes with one companion "<name>.qparams"
# f32 [N, K/32], each group's scale (w = scale * q).
INT8_ENCODING = "int8"
ENCODINGS = DENSE_ENCODINGS + tuple(BLOCK_ENCODINGS) + (INT4_ENCODING, INT8_ENCODING)

# What a precision plan may name for a tensor: "auto" lets the runtime choose by hardware.
PRECISIONS = ("auto", "fp32", "bf16", "f16", "int4", "int8")


@dataclass(frozen=True)
class RopeScaling:
    """RoPE frequency scaling: ``kind`` is ``"llama3"``, ``"linear"``, ``"freq_factors"``
    (a GGUF ``rope_freqs`` tensor, stored as ``model.rope_freqs``, divides the frequencies) or
    ``"longrope"`` (Phi-3's: ``model.rope_factors_short`` or, where the context runs past
    ``original_max_position_embeddings``, ``model.rope_factors_long`` divide the frequencies,
    and cos/sin are multiplied by ``attention_factor``)."""

    kind: str
    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192
    attention_factor: float = 1.0


@dataclass(frozen=True)
class Pooling:
    """How a model's final hidden states become one embedding per input (sentence-transformers'
    Pooling and Normalize modules). A model that declares one can answer ``embed``."""

    mode: str  # "mean" (over the input's tokens), "cls" (the first token) or "last" (the last token)
    normalize: bool  # scale each embedding to unit L2 norm
    max_tokens: int  # the longest input, in tokens with the special ones, the model embeds


@dataclass(frozen=True)
class ArchitectureConfig:
    """Hyper-parameters of a model: a Llama-family decoder, or a BERT-family encoder (which
    reads ``rms_norm_eps`` as its LayerNorm epsilon and has no RoPE: ``rope_theta`` is unused)."""

    architecture: str  # family the engine runs: "llama", "gemma3", "qwen3", "qwen3_moe", "phi3" or "bert"
    variant: str  # what the source called it: "llama", "mistral", "qwen2", "smollm2", ...
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    max_position_embeddings: int
    rms_norm_eps: float
    rope_theta: float
    tie_word_embeddings: bool
    attention_bias: bool = False
    rope_scaling: RopeScaling | None = None
    # Gemma 3: every ``sliding_window_pattern``-th layer attends globally (RoPE base rope_theta),
    # the others see the last ``sliding_window`` positions (RoPE base ``rope_local_theta``).
    # A window without a pattern (Mistral, Phi-3): every layer sees the last ``sliding_window``.
    sliding_window: int | None = None
    sliding_window_pattern: int | None = None
    rope_local_theta: float | None = None
    query_pre_attn_scalar: float | None = None  # attention scale is its -1/2 power (None: head_dim)
    pooling: Pooling | None = None  # how to embed; None: the model does not embed
    type_vocab_size: int = 0  # BERT's token-type (segment) embeddings; 0 for decoders
    rotary_dim: int | None = None  # RoPE turns the first rotary_dim dims of each head (None: all)
    # Mixture of experts (Qwen3-MoE; modelfile/moe.py): layer i's MLP is ``num_experts`` SwiGLU
    # experts of width ``moe_intermediate_size``, ``num_experts_per_tok`` of them per token (top-k
    # of the router's softmax, renormalised to sum 1 when ``norm_topk_prob``), when
    # (i + 1) % decoder_sparse_step == 0 and i is not in ``mlp_only_layers``; else the dense MLP.
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = False
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple[int, ...] = ()


@dataclass(frozen=True)
class TokenizerSpec:
    """Everything needed to encode, decode and chat-format text."""

    tokenizer_json: str  # a Hugging Face ``tokenizers`` serialization
    chat_template: str | None
    bos_token: str | None
    eos_token: str | None
    bos_token_id: int | None
    eos_token_ids: tuple[int, ...]
    pad_token_id: int | None = None
    add_bos_token: bool = False
    add_eos_token: bool = False


@dataclass(frozen=True)
class TensorSpec:
    """One stored tensor: its logical shape, how its bytes are encoded, their sha256."""

    name: str
    encoding: str
    shape: tuple[int, ...]
    sha256: str
    layout: str | None = None  # int4 only: the byte order ("avx512", "avx2", "default")


@dataclass(frozen=True)
class PrecisionPlan:
    """Compute precision per tensor: ``default``, then the first matching fnmatch pattern."""

    default: str = "auto"
    overrides: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Dataset:
    """A dataset the model was trained or tuned on, as the compiler was told (data lineage)."""

    name: str
    license: str | None = None
    sha256: str | None = None  # of the dataset file or archive as used
    source: str | None = None  # where it came from: a URL, a path, a catalog id
    preprocessing: tuple[str, ...] = ()  # the steps applied, in order


@dataclass(frozen=True)
class Lineage:
    """Where the file came from and how it was made (model lineage), and the datasets
    declared at compile time (data lineage; empty in files made before it existed)."""

    source_name: str
    source_sha256: str
    source_format: str  # "gguf" | "hf-safetensors"
    compiler_version: str
    recipe: dict[str, str]
    created_at: str  # ISO 8601, UTC
    license: str | None = None
    base_model: str | None = None
    datasets: tuple[Dataset, ...] = ()


@dataclass(frozen=True)
class ModelHeader:
    """The whole ``.mcp`` header."""

    name: str
    architecture: ArchitectureConfig
    tokenizer: TokenizerSpec
    tensors: tuple[TensorSpec, ...]
    precision_plan: PrecisionPlan
    lineage: Lineage
    format_version: int = FORMAT_VERSION
    extra: dict[str, str] = field(default_factory=dict)

    def tensor(self, name: str) -> TensorSpec:
        for spec in self.tensors:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, source: str = "<header>") -> ModelHeader:
        """Parse and validate a header; any problem is a ``ModelFormatError`` naming ``source``."""
        try:
            data = orjson.loads(text)  # fast: see layout._parse_json
        except orjson.JSONDecodeError as exc:
            raise ModelFormatError(f"{source}: the .mcp header is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ModelFormatError(f"{source}: the .mcp header is not a JSON object")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ModelFormatError(
                f"{source}: unknown .mcp format version {version!r}; this runtime reads version "
                f"{FORMAT_VERSION}. Recompile the model with this version's `mcp2026 compile`."
            )
        try:
            return _header_from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelFormatError(f"{source}: the .mcp header is malformed ({_what(exc)})") from None


def _what(exc: Exception) -> str:
    """What a failed parse lacked: a missing key is named as such, not as ``KeyError('x')``."""
    return f"the field {exc.args[0]!r} is missing" if isinstance(exc, KeyError) else str(exc)


def _header_from_dict(data: dict[str, Any]) -> ModelHeader:
    arch = dict(data["architecture"])
    scaling = arch.pop("rope_scaling", None)
    pooling = arch.pop("pooling", None)
    arch["mlp_only_layers"] = tuple(arch.get("mlp_only_layers", ()))  # a JSON list
    architecture = ArchitectureConfig(
        **arch, rope_scaling=RopeScaling(**scaling) if scaling else None,
        pooling=Pooling(**pooling) if pooling else None,
    )
    tok = dict(data["tokenizer"])
    tok["eos_token_ids"] = tuple(tok["eos_token_ids"])
    tensors = tuple(
        TensorSpec(name=t["name"], encoding=t["encoding"], shape=tuple(t["shape"]), sha256=t["sha256"],
                   layout=t.get("layout"))
        for t in data["tensors"]
    )
    for spec in tensors:
        if spec.encoding not in ENCODINGS:
            raise ValueError(f"tensor {spec.name} has unknown encoding {spec.encoding!r}")
    plan = data["precision_plan"]
    precision_plan = PrecisionPlan(
        default=plan["default"], overrides=tuple((p, v) for p, v in plan["overrides"])
    )
    return ModelHeader(
        name=data["name"],
        architecture=architecture,
        tokenizer=TokenizerSpec(**tok),
        tensors=tensors,
        precision_plan=precision_plan,
        lineage=lineage_from_dict(data["lineage"]),
        format_version=data["format_version"],
        extra=dict(data.get("extra", {})),
    )


def lineage_from_dict(data: dict[str, Any]) -> Lineage:
    """A ``Lineage`` from its JSON form (``datasets`` is absent in older files)."""
    fields = dict(data)
    datasets = tuple(
        Dataset(**{**entry, "preprocessing": tuple(entry.get("preprocessing", ()))})
        for entry in fields.pop("datasets", ())
    )
    return Lineage(**fields, datasets=datasets)


# safetensors dtype of each encoding's stored array; block encodings are raw bytes.
STORAGE_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "int8": "I8"}
BLOCK_STORAGE_DTYPE = "U8"
ITEM_SIZES = {"F32": 4, "F16": 2, "BF16": 2, "U8": 1, "I8": 1}


def storage_dtype(encoding: str) -> str:
    """The safetensors dtype a tensor of ``encoding`` is stored as."""
    return STORAGE_DTYPES.get(encoding, BLOCK_STORAGE_DTYPE)


def stored_shape(encoding: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of the stored array for a tensor of logical ``shape`` in ``encoding``."""
    if encoding in DENSE_ENCODINGS or encoding == INT8_ENCODING:
        return shape
    if encoding == INT4_ENCODING:
        return (shape[0], shape[1] // 2)
    block, nbytes = BLOCK_ENCODINGS[encoding]
    if shape[-1] % block:
        raise ValueError(f"last dimension {shape[-1]} is not a multiple of {encoding}'s block {block}")
    rows = 1
    for dim in shape[:-1]:
        rows *= dim
    return (rows, shape[-1] // block * nbytes)
