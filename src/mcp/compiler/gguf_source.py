"""Read a GGUF file as a compile source: metadata, tokenizer, tensors renamed and re-laid out.

GGUF names (``blk.N.attn_q.weight``) become Hugging Face Llama names. ``gguf.GGUFReader``
memory-maps the file and gives each tensor's data in numpy order (ggml's ``ne`` reversed),
which is already torch ``Linear`` layout (out, in); block types come as uint8
``[rows, row_bytes]``, the ``.mcp`` stored shape. For GGUF architecture "llama" llama.cpp's
converter permuted the rows of Q and K (its RoPE pairs adjacent elements); they are put back
in Hugging Face (rotate_half) order here, which works on whole rows, so blocks stay intact.
"qwen2", "gemma3" and "phi3" GGUFs are not permuted by llama.cpp and are taken as they are.

Gemma 3 ("gemma3"): four norms a layer and q/k norms, named as Hugging Face names them; the
GGUF's norm weights already hold Gemma's ``(1 + w)`` multiplier, which is what the ``.mcp``
stores. The file does not record the layer pattern or the local layers' RoPE base: llama.cpp
fixes them for the architecture (every 6th layer global, base 10000), and so does this reader.

Qwen3 ("qwen3") and Qwen3-MoE ("qwen3moe"): q/k norms, a router and stacked experts split one
matrix per expert (compiler/gguf_qwen3.py).

Phi-3 ("phi3"): q/k/v fused in ``attn_qkv``, gate and up in ``ffn_up`` (gate rows first), kept
fused (``qkv_proj``, ``gate_up_proj``); ``rope.dimension_count`` below the head size is partial
rotary; LongRoPE's factors come as the tensors ``rope_factors_long``/``rope_factors_short``
beside ``rope.scaling.original_context_length`` and ``rope.scaling.attn_factor``. A
``{arch}.attention.sliding_window`` on a "llama" or "phi3" file windows every layer.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFReader, ReaderTensor

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.compiler.compiler import SourceModel, SourceTensor, TensorValue
from mcp.compiler import gguf_qwen3
from mcp.compiler.gguf_tokenizer import tokenizer_spec_from_gguf
from mcp.modelfile.hashing import file_sha256
from mcp.modelfile.spec import ArchitectureConfig, RopeScaling, TokenizerSpec, stored_shape
from mcp.modelfile.validate import MAX_DIM, check_architecture

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "gemma3", *gguf_qwen3.FAMILIES, "phi3")
TENSOR_ENCODINGS = {
    GGMLQuantizationType.F32: "f32",
    GGMLQuantizationType.F16: "f16",
    GGMLQuantizationType.BF16: "bf16",
    GGMLQuantizationType.Q4_0: "q4_0",
    GGMLQuantizationType.Q4_1: "q4_1",
    GGMLQuantizationType.Q5_0: "q5_0",
    GGMLQuantizationType.Q5_1: "q5_1",
    GGMLQuantizationType.Q8_0: "q8_0",
    GGMLQuantizationType.Q4_K: "q4_k",
    GGMLQuantizationType.Q5_K: "q5_k",
    GGMLQuantizationType.Q6_K: "q6_k",
}
_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "rope_freqs.weight": "model.rope_freqs",
    "rope_factors_long.weight": "model.rope_factors_long",
    "rope_factors_short.weight": "model.rope_factors_short",
}
_LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_GEMMA3_LAYER_NAMES = {
    **_LAYER_NAMES,
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "ffn_norm.weight": "pre_feedforward_layernorm.weight",
    "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
}
_QWEN3_LAYER_NAMES = {**_LAYER_NAMES, **gguf_qwen3.LAYER_NAMES}
_PHI3_LAYER_NAMES = {
    **{name: hf for name, hf in _LAYER_NAMES.items() if not name.startswith(("attn_q", "attn_k", "attn_v", "ffn_"))},
    "attn_qkv.weight": "self_attn.qkv_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_up.weight": "mlp.gate_up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GEMMA3_SLIDING_WINDOW_PATTERN = 6  # llama.cpp's LLM_ARCH_GEMMA3 (and transformers' Gemma3TextConfig)
GEMMA3_ROPE_LOCAL_THETA = 10000.0
_LAYER_PATTERN = re.compile(r"blk\.(\d+)\.(.+)")
_REQUIRED = object()


def load_gguf(path: Path) -> SourceModel:
    """Read ``path`` (a GGUF file) into a ``SourceModel``; tensor data stays memory-mapped."""
    reader = open_reader(path)
    arch_name = read_field(path, reader, "general.architecture")
    if arch_name not in SUPPORTED_ARCHITECTURES:
        raise UnsupportedModelError(
            f"{path}: GGUF architecture {arch_name!r} is not supported; supported: "
            f"{', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    by_name = {t.name: t for t in reader.tensors}
    architecture = _architecture(path, reader, arch_name, by_name)
    permuted = arch_name == "llama"
    tensors = tuple(s for t in reader.tensors for s in _source_tensors(path, t, architecture, permuted, arch_name))
    return SourceModel(
        name=path.name,
        format="gguf",
        sha256=file_sha256(path),
        architecture=architecture,
        tokenizer=_tokenizer(path, reader),
        tensors=tensors,
        license=read_field(path, reader, "general.license", None),
        base_model=read_field(path, reader, "general.name", None),
        recipe={"qk_layout": "unpermuted" if permuted else "native", "source_architecture": arch_name},
    )


def _tokenizer(path: Path, reader: GGUFReader) -> TokenizerSpec:
    """The tokenizer from the GGUF's metadata. Its fields arrive as whatever types the file
    declares (a token list of numbers, a pre-tokenizer name that is an array): any such
    mismatch is this file's fault, and a ``ModelFormatError`` naming it."""
    try:
        return tokenizer_spec_from_gguf(reader)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise ModelFormatError(f"{path}: the GGUF's tokenizer metadata is malformed ({type(exc).__name__}: "
                               f"{str(exc)[:200]})") from None


def open_reader(path: Path) -> GGUFReader:
    try:
        return GGUFReader(path)
    except (ValueError, IndexError, KeyError, OSError) as exc:
        raise ModelFormatError(f"{path}: not a readable GGUF file ({exc})") from None


def read_field(path: Path, reader: GGUFReader, key: str, default: Any = _REQUIRED) -> Any:
    field = reader.get_field(key)
    if field is None:
        if default is _REQUIRED:
            raise ModelFormatError(f"{path}: GGUF metadata {key} is missing")
        return default
    try:
        return field.contents()
    except UnicodeDecodeError:
        raise ModelFormatError(f"{path}: GGUF metadata {key} is not valid UTF-8") from None


def _architecture(
    path: Path, reader: GGUFReader, arch: str, by_name: dict[str, ReaderTensor]
) -> ArchitectureConfig:
    def get(key: str, default: Any = _REQUIRED) -> Any:
        return read_field(path, reader, f"{arch}.{key}", default)

    def count(key: str, default: Any = _REQUIRED) -> int:
        return gguf_count(path, f"{arch}.{key}", get(key, default))

    def number(key: str, default: Any = _REQUIRED) -> float:
        return gguf_number(path, f"{arch}.{key}", get(key, default))

    hidden, heads = count("embedding_length"), count("attention.head_count")
    head_dim = count("attention.key_length", hidden // heads)
    rope_dims = count("rope.dimension_count", head_dim)
    if rope_dims != head_dim and arch != "phi3":
        raise UnsupportedModelError(
            f"{path}: partial rotary embeddings ({rope_dims} of {head_dim} dims) are not supported"
        )
    tokens = read_field(path, reader, "tokenizer.ggml.tokens")
    if not isinstance(tokens, list):
        raise ModelFormatError(f"{path}: GGUF metadata tokenizer.ggml.tokens must be an array of strings")
    moe = gguf_qwen3.moe_fields(path, get, count, by_name) if arch == "qwen3moe" else {}
    architecture = ArchitectureConfig(
        architecture={"gemma3": "gemma3", "phi3": "phi3", **gguf_qwen3.FAMILIES}.get(arch, "llama"),
        variant=arch,
        vocab_size=len(tokens),
        hidden_size=hidden,
        intermediate_size=count("feed_forward_length", moe.get("moe_intermediate_size", _REQUIRED)),
        num_layers=count("block_count"),
        num_attention_heads=heads,
        num_kv_heads=count("attention.head_count_kv", heads),
        head_dim=head_dim,
        max_position_embeddings=count("context_length"),
        rms_norm_eps=number("attention.layer_norm_rms_epsilon"),
        rope_theta=number("rope.freq_base", 10000.0),
        tie_word_embeddings="output.weight" not in by_name,
        attention_bias="blk.0.attn_q.bias" in by_name,
        rope_scaling=_phi3_longrope(get, count, number) if "rope_factors_long.weight" in by_name
        else _rope_scaling(path, get, "rope_freqs.weight" in by_name),
        **(_gemma3_fields(count, head_dim) if arch == "gemma3"
           else _window_fields(arch, get, count, rope_dims, head_dim)),
        **moe,
    )
    # the experts' count is bounded by the routers' rows in the file; each becomes 3 tensors a layer
    check_architecture(architecture, str(path), len(by_name) * (1 + 3 * architecture.num_experts))
    return architecture


def _gemma3_fields(count, head_dim: int) -> dict[str, Any]:
    """Gemma 3's window: its size from the file, the rest as llama.cpp fixes it for the
    architecture (attention scaled by head_dim ** -0.5, but by (hidden / heads) ** -0.5 in the
    62-layer 27B, whose query_pre_attn_scalar is 168)."""
    scalar = count("embedding_length") // count("attention.head_count") if count("block_count") == 62 else head_dim
    return {"sliding_window": count("attention.sliding_window"),
            "sliding_window_pattern": GEMMA3_SLIDING_WINDOW_PATTERN,
            "rope_local_theta": GEMMA3_ROPE_LOCAL_THETA, "query_pre_attn_scalar": float(scalar)}


def _window_fields(arch: str, get, count, rope_dims: int, head_dim: int) -> dict[str, Any]:
    """A window on every layer where a "llama" or "phi3" file sets one; the rotated dims where
    fewer than a head's."""
    has_window = arch in ("llama", "phi3") and get("attention.sliding_window", None) is not None
    window = count("attention.sliding_window") if has_window else None
    return {"sliding_window": window, "rotary_dim": None if rope_dims == head_dim else rope_dims}


def _phi3_longrope(get, count, number) -> RopeScaling:
    """LongRoPE as llama.cpp's converter writes it; the attention factor, where the file leaves it
    out, computed as transformers computes it."""
    original = count("rope.scaling.original_context_length")
    factor = count("context_length") / original
    attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    if get("rope.scaling.attn_factor", None) is not None:
        attention = number("rope.scaling.attn_factor")
    return RopeScaling(kind="longrope", factor=factor, original_max_position_embeddings=original,
                       attention_factor=attention)


def gguf_count(path: Path, key: str, value: Any) -> int:
    """A GGUF count (heads, layers, lengths): an integer from 1 to ``MAX_DIM``, else a
    ``ModelFormatError`` naming the key (0 heads would divide by zero; 2**60 layers would loop)."""
    if type(value) is not int or not 1 <= value <= MAX_DIM:
        raise ModelFormatError(f"{path}: GGUF metadata {key} must be an integer from 1 to {MAX_DIM}, "
                               f"not {_shown(value)}")
    return value


def gguf_number(path: Path, key: str, value: Any) -> float:
    """A GGUF float field (epsilon, RoPE base): a finite number above 0."""
    if type(value) not in (int, float) or not (math.isfinite(value) and value > 0):
        raise ModelFormatError(f"{path}: GGUF metadata {key} must be a finite number above 0, not {_shown(value)}")
    return float(value)


def _shown(value: Any) -> str:
    """A metadata value in a message, cut short (an array field may hold 100,000 entries)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _rope_scaling(path: Path, get, has_freq_factors: bool) -> RopeScaling | None:
    kind = get("rope.scaling.type", None)
    factor = get("rope.scaling.factor", None)
    if kind is None and get("rope.scale_linear", None) is not None:
        kind, factor = "linear", get("rope.scale_linear")
    if kind == "linear":
        factor = gguf_number(path, "rope.scaling.factor", 1.0 if factor is None else factor)
    if kind in (None, "none") or (kind == "linear" and factor == 1.0):
        kind = None
    elif kind != "linear":
        raise UnsupportedModelError(f"{path}: RoPE scaling type {kind!r} is not supported (linear is)")
    if has_freq_factors:
        if kind is not None:
            raise UnsupportedModelError(
                f"{path}: rope_freqs together with {kind} RoPE scaling is not supported"
            )
        return RopeScaling(kind="freq_factors", factor=1.0)
    return RopeScaling(kind="linear", factor=factor) if kind else None


def mcp_name(path: Path, gguf_name: str, arch_name: str = "llama") -> str:
    """The Hugging Face name of a GGUF tensor; an unknown one is an ``UnsupportedModelError``."""
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    names = {"gemma3": _GEMMA3_LAYER_NAMES, "qwen3": _QWEN3_LAYER_NAMES, "qwen3moe": _QWEN3_LAYER_NAMES,
             "phi3": _PHI3_LAYER_NAMES}.get(arch_name, _LAYER_NAMES)
    match = _LAYER_PATTERN.fullmatch(gguf_name)
    if match and match.group(2) in names:
        return f"model.layers.{match.group(1)}.{names[match.group(2)]}"
    family = {"gemma3": "Gemma 3", "qwen3": "Qwen3", "qwen3moe": "Qwen3-MoE", "phi3": "Phi-3"}.get(arch_name,
                                                                                                 "Llama-family")
    raise UnsupportedModelError(f"{path}: tensor {gguf_name} has no place in a {family} model")


def _source_tensors(
    path: Path, tensor: ReaderTensor, arch: ArchitectureConfig, permuted: bool, arch_name: str
) -> tuple[SourceTensor, ...]:
    """The ``.mcp`` tensors a GGUF tensor becomes: itself, or one per expert for stacked experts."""
    source = _source_tensor(path, tensor, arch, permuted, arch_name)
    if not gguf_qwen3.is_stacked_experts(source.name):
        return (source,)
    if len(source.shape) != 3:
        raise ModelFormatError(f"{path}: tensor {tensor.name} has shape {list(source.shape)}; stacked experts "
                               "are [experts, rows, cols]")
    return gguf_qwen3.split_experts(tensor, source.name, source.encoding, source.shape)


def _source_tensor(
    path: Path, tensor: ReaderTensor, arch: ArchitectureConfig, permuted: bool, arch_name: str
) -> SourceTensor:
    name = mcp_name(path, tensor.name, arch_name)
    encoding = TENSOR_ENCODINGS.get(tensor.tensor_type)
    if encoding is None:
        raise UnsupportedModelError(
            f"{path}: tensor {tensor.name} has type {tensor.tensor_type.name}, which is not "
            f"supported; supported types: {', '.join(t.name for t in TENSOR_ENCODINGS)}"
        )
    shape = tuple(int(d) for d in reversed(tensor.shape.tolist()))
    heads = _permuted_heads(name, arch) if permuted else None
    return SourceTensor(name, encoding, shape, lambda: _load(tensor, encoding, shape, heads))


def _permuted_heads(name: str, arch: ArchitectureConfig) -> int | None:
    """How many heads llama.cpp permuted this tensor's rows in, or None."""
    if ".self_attn.q_proj." in name:
        return arch.num_attention_heads
    if ".self_attn.k_proj." in name:
        return arch.num_kv_heads
    return None


def _load(tensor: ReaderTensor, encoding: str, shape: tuple[int, ...], heads: int | None) -> TensorValue:
    data = tensor.data
    if encoding == "bf16":  # the reader gives raw bytes; the view needs a writable copy
        raw = torch.from_numpy(np.array(data)).reshape(-1)
        value: TensorValue = raw.view(torch.bfloat16).reshape(shape)
    else:
        value = data.reshape(stored_shape(encoding, shape))
    return unpermute_rows(value, heads) if heads else value


def unpermute_rows(value: TensorValue, num_heads: int) -> TensorValue:
    """Undo llama.cpp's Q/K row permutation: per head, rows (0, 2, 4, ..., 1, 3, 5, ...)."""
    rows = value.shape[0]
    split = value.reshape(num_heads, rows // num_heads // 2, 2, *value.shape[1:])
    return split.swapaxes(1, 2).reshape(value.shape)
