"""The semantic checks of a ``.mcp`` header, run when a file is opened (no torch, no tensor data).

``spec.ModelHeader.from_json`` turns the JSON into typed dataclasses; this module checks that
what they say is a model the engine can build: every field of the type it is declared, every
count positive and every size within bounds, heads that divide evenly, and a tensor table that
is exactly the architecture's (each tensor's shape, an encoding that fits that shape, the
companions a quantized tensor needs, with their shapes). A file that passes is one the engine
loads without tripping over a shape; one that does not is a ``ModelFormatError`` that names
the file and the field, never a TypeError from deep in a kernel.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from typing import Any, Union

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.modelfile.spec import (
    BLOCK_ENCODINGS,
    ENCODINGS,
    INT4_ENCODING,
    INT8_ENCODING,
    PRECISIONS,
    QPARAMS_SUFFIX,
    SCALE_ZERO_SUFFIX,
    ArchitectureConfig,
    ModelHeader,
    TensorSpec,
)
from mcp.modelfile.encoder import ENCODER_ARCHITECTURES, check_encoder, check_pooling, encoder_tensor_shapes
from mcp.modelfile.moe import QWEN3_ARCHITECTURES, check_moe, is_sparse_layer, moe_tensor_shapes, qk_norm_shapes

SUPPORTED_ARCHITECTURES = ("llama", "gemma3", *QWEN3_ARCHITECTURES, "phi3", *ENCODER_ARCHITECTURES)
ROPE_SCALING_KINDS = ("llama3", "linear", "freq_factors", "longrope")
GROUP_SIZE = 32  # int4/int8 group along K (mcp.engine.quant.int4pack.GROUP_SIZE)
INT4_ROW_ALIGN = 64  # int4 rows come in blocks of 64 in the widest kernel layout (int4pack.ROW_ALIGN)
INT4_LAYOUTS = ("rows", "avx512", "avx2", "default")  # int4pack.LAYOUTS
QPARAMS_ENCODINGS = ("f16", "f32")  # what the int4/int8 kernels read scales as
MAX_DIM = 1 << 31  # no dimension of a model this engine runs comes near it
MAX_POSITIONS = 1 << 24  # the rotary tables hold every position; past this they alone exhaust memory
MAX_NDIM = 4

_COUNTS = ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_attention_heads",
           "num_kv_heads", "head_dim", "max_position_embeddings")


def check_header(header: ModelHeader, source: str) -> None:
    """Raise a ``ModelFormatError`` naming ``source`` unless ``header`` describes a buildable model."""
    check_types(header, source, "header")
    check_model(header, source)


def check_model(header: ModelHeader, source: str) -> None:
    """``check_header`` less the types (``layout`` checks those first, the stored tensors second)."""
    check_architecture(header.architecture, source, len(header.tensors))
    _check_tokenizer(header, source)
    _check_precision_plan(header, source)
    _check_tensor_table(header, source)


# -- types ---------------------------------------------------------------------------------
def check_types(obj: Any, source: str, where: str) -> None:
    """Every field of the dataclass ``obj`` (recursively) holds a value of its declared type."""
    hints = _type_hints(type(obj))
    for item in dataclasses.fields(obj):
        value, hint = getattr(obj, item.name), hints[item.name]
        if not _conforms(value, hint):
            raise ModelFormatError(f"{source}: the .mcp header's {where}.{item.name} must be "
                                   f"{_describe(hint)}, not {type(value).__name__}")
        for index, nested in _nested_dataclasses(value):
            check_types(nested, source, f"{where}.{item.name}{index}")


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved field types: resolving them compiles each annotation string, and
    a header holds a few hundred dataclasses of a handful of types (30 ms a load, uncached)."""
    return typing.get_type_hints(cls)


def _nested_dataclasses(value: Any) -> list[tuple[str, Any]]:
    if dataclasses.is_dataclass(value):
        return [("", value)]
    if isinstance(value, tuple):
        return [(f"[{i}]", v) for i, v in enumerate(value) if dataclasses.is_dataclass(v)]
    return []


def _conforms(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is Any:
        return True
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(_conforms(v, a) for v, a in zip(value, args))
    if origin is dict:
        return isinstance(value, dict) and all(_conforms(k, args[0]) and _conforms(v, args[1])
                                               for k, v in value.items())
    return isinstance(value, origin or hint)


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in args)
    if hint is type(None):
        return "null"
    if origin is tuple:
        return f"a list of {_describe(args[0])}" if args and args[-1] is Ellipsis else "a list"
    if origin is dict:
        return "an object of strings"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        hint, f"an object ({getattr(hint, '__name__', hint)})")


# -- architecture --------------------------------------------------------------------------
def check_architecture(arch: ArchitectureConfig, source: str, num_tensors: int) -> None:
    """Counts positive and bounded, heads that divide evenly, finite positive norms and RoPE;
    ``num_tensors`` (what the file holds) bounds the layer count before anything loops over it."""
    check_types(arch, source, "architecture")
    if arch.architecture not in SUPPORTED_ARCHITECTURES:
        raise UnsupportedModelError(f"{source}: architecture {arch.architecture!r} is not supported "
                                    f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")
    for name in _COUNTS:
        value, limit = getattr(arch, name), MAX_POSITIONS if name == "max_position_embeddings" else MAX_DIM
        if not 1 <= value <= limit:
            raise ModelFormatError(f"{source}: architecture.{name} is {value}; it must be between 1 and {limit}")
    # each layer has at least 9 tensors: a layer count past the table cannot be real (and must
    # not become a loop over billions of names)
    if arch.num_layers > num_tensors:
        raise ModelFormatError(f"{source}: architecture.num_layers is {arch.num_layers} but the model holds "
                               f"only {num_tensors} tensors")
    if arch.num_attention_heads % arch.num_kv_heads:
        raise ModelFormatError(f"{source}: architecture.num_attention_heads ({arch.num_attention_heads}) is not "
                               f"a multiple of num_kv_heads ({arch.num_kv_heads})")
    check_pooling(arch, source)
    check_moe(arch, source, num_tensors, MAX_DIM)
    if arch.architecture in ENCODER_ARCHITECTURES:  # no RoPE
        _positive(arch.rms_norm_eps, source, "architecture.rms_norm_eps")
        check_encoder(arch, source)
        return
    if arch.head_dim % 2:
        raise ModelFormatError(f"{source}: architecture.head_dim is {arch.head_dim}; rotary embeddings need it even")
    for name in ("rms_norm_eps", "rope_theta"):
        _positive(getattr(arch, name), source, f"architecture.{name}")
    if arch.rope_scaling is not None:
        _check_rope_scaling(arch, source)
    if arch.rotary_dim is not None and not (2 <= arch.rotary_dim <= arch.head_dim and arch.rotary_dim % 2 == 0):
        raise ModelFormatError(f"{source}: architecture.rotary_dim is {arch.rotary_dim}; it must be even, from 2 "
                               f"to head_dim ({arch.head_dim})")
    _check_window(arch, source)


def _check_window(arch: ArchitectureConfig, source: str) -> None:
    """A sliding window alone (every layer windowed, as Mistral's), or with its layer pattern and
    the local RoPE base (Gemma 3's local layers), all positive."""
    layered = (arch.sliding_window_pattern, arch.rope_local_theta)
    if arch.sliding_window is None and all(value is None for value in layered):
        return
    if arch.sliding_window is None or any(value is None for value in layered) and \
            any(value is not None for value in layered):
        raise ModelFormatError(f"{source}: architecture.sliding_window_pattern and rope_local_theta must be "
                               "given together, with a sliding_window")
    for name in ("sliding_window", "sliding_window_pattern"):
        if getattr(arch, name) is not None and not 1 <= getattr(arch, name) <= MAX_POSITIONS:
            raise ModelFormatError(f"{source}: architecture.{name} must be between 1 and {MAX_POSITIONS}")
    if arch.rope_local_theta is not None:
        _positive(arch.rope_local_theta, source, "architecture.rope_local_theta")
    if arch.query_pre_attn_scalar is not None:
        _positive(arch.query_pre_attn_scalar, source, "architecture.query_pre_attn_scalar")


def _check_rope_scaling(arch: ArchitectureConfig, source: str) -> None:
    scaling = arch.rope_scaling
    if scaling.kind not in ROPE_SCALING_KINDS:
        raise UnsupportedModelError(f"{source}: architecture.rope_scaling.kind {scaling.kind!r} is not one of "
                                    f"{', '.join(ROPE_SCALING_KINDS)}")
    for name in ("factor", "low_freq_factor", "high_freq_factor", "attention_factor"):
        _positive(getattr(scaling, name), source, f"architecture.rope_scaling.{name}")
    if scaling.kind in ("llama3", "longrope") and not 1 <= scaling.original_max_position_embeddings <= MAX_POSITIONS:
        raise ModelFormatError(f"{source}: architecture.rope_scaling.original_max_position_embeddings must be "
                               f"between 1 and {MAX_POSITIONS}")
    if scaling.kind == "llama3":
        if scaling.high_freq_factor <= scaling.low_freq_factor:
            raise ModelFormatError(f"{source}: architecture.rope_scaling: high_freq_factor must be above "
                                   "low_freq_factor for llama3 scaling")


def _positive(value: float, source: str, where: str) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ModelFormatError(f"{source}: {where} is {value}; it must be a finite number above 0")


# -- tokenizer and precision plan ----------------------------------------------------------
def _check_tokenizer(header: ModelHeader, source: str) -> None:
    tok, vocab = header.tokenizer, header.architecture.vocab_size
    ids = [("bos_token_id", tok.bos_token_id), ("pad_token_id", tok.pad_token_id),
           *((f"eos_token_ids[{i}]", v) for i, v in enumerate(tok.eos_token_ids))]
    for name, value in ids:
        if value is not None and not 0 <= value < vocab:
            raise ModelFormatError(f"{source}: tokenizer.{name} is {value}, outside the vocabulary (0..{vocab - 1})")
    if tok.add_bos_token and tok.bos_token is None:
        raise ModelFormatError(f"{source}: tokenizer.add_bos_token is set but tokenizer.bos_token is null")
    if tok.add_eos_token and tok.eos_token is None:
        raise ModelFormatError(f"{source}: tokenizer.add_eos_token is set but tokenizer.eos_token is null")


def _check_precision_plan(header: ModelHeader, source: str) -> None:
    plan = header.precision_plan
    for where, precision in (("default", plan.default),
                             *((f"overrides[{i}]", p) for i, (_, p) in enumerate(plan.overrides))):
        if precision not in PRECISIONS:
            raise ModelFormatError(f"{source}: precision_plan.{where} is {precision!r}, not one of "
                                   f"{', '.join(PRECISIONS)}")


# -- tensor table --------------------------------------------------------------------------
def expected_tensor_shapes(arch: ArchitectureConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a ``.mcp`` of this architecture holds, with its logical shape, in order."""
    if arch.architecture in ENCODER_ARCHITECTURES:
        return encoder_tensor_shapes(arch)
    hidden, hd = arch.hidden_size, arch.head_dim
    q_rows, kv_rows = arch.num_attention_heads * hd, arch.num_kv_heads * hd
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (arch.vocab_size, hidden)}
    for i in range(arch.num_layers):
        layer = f"model.layers.{i}"
        shapes[f"{layer}.input_layernorm.weight"] = (hidden,)
        if arch.architecture == "phi3":
            shapes.update(_phi3_fused_shapes(layer, arch))
            continue
        for proj, rows in (("q", q_rows), ("k", kv_rows), ("v", kv_rows)):
            shapes[f"{layer}.self_attn.{proj}_proj.weight"] = (rows, hidden)
            if arch.attention_bias:
                shapes[f"{layer}.self_attn.{proj}_proj.bias"] = (rows,)
        shapes[f"{layer}.self_attn.o_proj.weight"] = (hidden, q_rows)
        if arch.architecture == "gemma3":
            shapes.update(_gemma3_norm_shapes(layer, hidden, hd))
        elif arch.architecture in QWEN3_ARCHITECTURES:
            shapes.update(qk_norm_shapes(arch, layer))
        shapes[f"{layer}.post_attention_layernorm.weight"] = (hidden,)
        if is_sparse_layer(arch, i):
            shapes.update(moe_tensor_shapes(arch, layer))
            continue
        shapes[f"{layer}.mlp.gate_proj.weight"] = (arch.intermediate_size, hidden)
        shapes[f"{layer}.mlp.up_proj.weight"] = (arch.intermediate_size, hidden)
        shapes[f"{layer}.mlp.down_proj.weight"] = (hidden, arch.intermediate_size)
    shapes["model.norm.weight"] = (hidden,)
    if not arch.tie_word_embeddings:
        shapes["lm_head.weight"] = (arch.vocab_size, hidden)
    if arch.rope_scaling is not None and arch.rope_scaling.kind == "freq_factors":
        shapes["model.rope_freqs"] = (hd // 2,)
    if arch.rope_scaling is not None and arch.rope_scaling.kind == "longrope":
        rotated = arch.rotary_dim or hd
        shapes.update({"model.rope_factors_long": (rotated // 2,), "model.rope_factors_short": (rotated // 2,)})
    return shapes


def _phi3_fused_shapes(layer: str, arch: ArchitectureConfig) -> dict[str, tuple[int, ...]]:
    """Phi-3's layer, Hugging Face names: q/k/v in one matrix (rows q, then k, then v) and gate/up
    in one (rows gate, then up), as its checkpoints and llama.cpp's GGUF store them."""
    hidden, hd = arch.hidden_size, arch.head_dim
    q_rows, kv_rows = arch.num_attention_heads * hd, arch.num_kv_heads * hd
    return {f"{layer}.self_attn.qkv_proj.weight": (q_rows + 2 * kv_rows, hidden),
            f"{layer}.self_attn.o_proj.weight": (hidden, q_rows),
            f"{layer}.post_attention_layernorm.weight": (hidden,),
            f"{layer}.mlp.gate_up_proj.weight": (2 * arch.intermediate_size, hidden),
            f"{layer}.mlp.down_proj.weight": (hidden, arch.intermediate_size)}


def _gemma3_norm_shapes(layer: str, hidden: int, head_dim: int) -> dict[str, tuple[int, ...]]:
    """Gemma 3's norms beside Llama's (Hugging Face names): on queries and keys, before and
    after the MLP; its ``post_attention_layernorm`` follows attention, before the residual."""
    return {f"{layer}.self_attn.q_norm.weight": (head_dim,), f"{layer}.self_attn.k_norm.weight": (head_dim,),
            f"{layer}.post_feedforward_layernorm.weight": (hidden,),
            f"{layer}.pre_feedforward_layernorm.weight": (hidden,)}


def companion_shapes(spec: TensorSpec) -> dict[str, tuple[tuple[int, ...], tuple[str, ...]]]:
    """The companions a quantized tensor needs: name -> (shape, the encodings allowed)."""
    if spec.encoding not in (INT4_ENCODING, INT8_ENCODING):
        return {}
    rows, groups = spec.shape[0], spec.shape[1] // GROUP_SIZE
    if spec.encoding == INT8_ENCODING:
        return {spec.name + QPARAMS_SUFFIX: ((rows, groups), QPARAMS_ENCODINGS)}
    return {spec.name + QPARAMS_SUFFIX: ((rows, groups, 2), QPARAMS_ENCODINGS),
            spec.name + SCALE_ZERO_SUFFIX: ((groups, rows, 2), ("bf16",))}


def _check_tensor_table(header: ModelHeader, source: str) -> None:
    arch = header.architecture
    by_name: dict[str, TensorSpec] = {}
    for spec in header.tensors:
        if spec.name in by_name:
            raise ModelFormatError(f"{source}: tensor {spec.name} is listed twice in the .mcp header")
        by_name[spec.name] = spec
        check_tensor(spec, source)
    expected = {name: (shape, ENCODINGS) for name, shape in expected_tensor_shapes(arch).items()}
    for name in list(expected):
        if name in by_name:
            expected.update(companion_shapes(by_name[name]))
    _check_names(set(by_name), expected, source)
    for name, (shape, encodings) in expected.items():
        spec = by_name[name]
        if spec.shape != shape:
            raise ModelFormatError(f"{source}: tensor {name} has shape {list(spec.shape)}; the architecture "
                                   f"needs {list(shape)}")
        if spec.encoding not in encodings:
            raise ModelFormatError(f"{source}: tensor {name} is {spec.encoding}; it must be one of "
                                   f"{', '.join(encodings)}")


def _check_names(given: set[str], expected: dict[str, Any], source: str) -> None:
    missing, extra = [n for n in expected if n not in given], sorted(given - set(expected))
    if missing:
        raise ModelFormatError(f"{source}: the .mcp header lacks tensors the architecture needs: "
                               f"{', '.join(missing[:5])}" + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    if extra:
        raise ModelFormatError(f"{source}: the .mcp header lists tensors with no place in the architecture: "
                               f"{', '.join(extra[:5])}" + (f" and {len(extra) - 5} more" if len(extra) > 5 else ""))


def check_tensor(spec: TensorSpec, source: str) -> None:
    """One tensor's shape against its encoding (not yet against the architecture)."""
    where = f"{source}: tensor {spec.name}"
    if spec.encoding not in ENCODINGS:
        raise ModelFormatError(f"{where} has unknown encoding {spec.encoding!r}")
    if not 1 <= len(spec.shape) <= MAX_NDIM or not all(1 <= d <= MAX_DIM for d in spec.shape):
        raise ModelFormatError(f"{where} has shape {list(spec.shape)}; a shape is 1 to {MAX_NDIM} dimensions, "
                               f"each between 1 and {MAX_DIM}")
    if (spec.layout is not None) != (spec.encoding == INT4_ENCODING):
        raise ModelFormatError(f"{where}: only an int4 tensor has a layout, and it must have one")
    if spec.encoding in BLOCK_ENCODINGS and spec.shape[-1] % BLOCK_ENCODINGS[spec.encoding][0]:
        raise ModelFormatError(f"{where}: its last dimension {spec.shape[-1]} is not a multiple of "
                               f"{spec.encoding}'s block of {BLOCK_ENCODINGS[spec.encoding][0]}")
    if spec.encoding in (INT4_ENCODING, INT8_ENCODING):
        _check_grouped(spec, where)


def _check_grouped(spec: TensorSpec, where: str) -> None:
    if len(spec.shape) != 2 or spec.shape[1] % GROUP_SIZE:
        raise ModelFormatError(f"{where}: an {spec.encoding} tensor is a matrix [N, K] with K a multiple of "
                               f"{GROUP_SIZE}, not {list(spec.shape)}")
    if spec.encoding == INT4_ENCODING:
        if spec.layout not in INT4_LAYOUTS:
            raise ModelFormatError(f"{where}: int4 layout {spec.layout!r} is not one of {', '.join(INT4_LAYOUTS)}")
        if spec.shape[0] % INT4_ROW_ALIGN:
            raise ModelFormatError(f"{where}: an int4 tensor has a multiple of {INT4_ROW_ALIGN} rows, "
                                   f"not {spec.shape[0]}")

