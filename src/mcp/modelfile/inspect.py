"""The text ``mcp2026 inspect`` prints for a ``.mcp`` file."""

from __future__ import annotations

import json
import math
from collections import Counter

from mcp.modelfile.encoder import ENCODER_ARCHITECTURES
from mcp.modelfile.moe import is_sparse_layer
from mcp.modelfile.reader import ModelFile
from mcp.modelfile.spec import (
    QPARAMS_SUFFIX,
    SCALE_ZERO_SUFFIX,
    ModelHeader,
    TensorSpec,
    TokenizerSpec,
    stored_shape,
)
from mcp.modelfile.spec import ITEM_SIZES, storage_dtype

COMPANION_SUFFIXES = (QPARAMS_SUFFIX, SCALE_ZERO_SUFFIX)  # parts of an int4 tensor, not parameters


def describe(model: ModelFile, show_plan: bool = True, show_tensors: bool = True) -> str:
    """Header, architecture, tokenizer, tensors, precision plan, lineage and totals as text."""
    header = model.header
    sections = [
        _section("model", [("file", str(model.path)), ("name", header.name),
                           ("format", f".mcp version {header.format_version}"),
                           *sorted(header.extra.items())]),
        _architecture(header),
        _tokenizer(header.tokenizer),
    ]
    if show_tensors:
        sections.append(_tensors(header))
    if show_plan:
        sections.append(_plan(header))
    sections.append(_lineage(header))
    sections.append(_datasets(header))
    sections.append(_totals(model))
    return "\n\n".join(sections) + "\n"


def tensor_nbytes(spec: TensorSpec) -> int:
    """Bytes the tensor takes in the file."""
    return math.prod(stored_shape(spec.encoding, spec.shape)) * ITEM_SIZES[storage_dtype(spec.encoding)]


def _section(title: str, rows: list[tuple[str, str]]) -> str:
    width = max((len(key) for key, _ in rows), default=0)
    return "\n".join([title, *(f"  {key:<{width}}  {value}" for key, value in rows)])


def _architecture(header: ModelHeader) -> str:
    arch = header.architecture
    scaling = arch.rope_scaling
    rope = f"theta {arch.rope_theta:g}"
    if scaling is not None:
        rope += f", scaling {scaling.kind} (factor {scaling.factor:g})"
    if scaling is not None and scaling.kind == "longrope":
        rope += (f", original context {scaling.original_max_position_embeddings}, attention factor "
                 f"{scaling.attention_factor:.6g}")
    if arch.rotary_dim is not None:
        rope += f", first {arch.rotary_dim} of {arch.head_dim} dims"
    return _section("architecture", [
        ("family", f"{arch.architecture} (variant {arch.variant})"),
        ("layers", str(arch.num_layers)),
        ("hidden size", str(arch.hidden_size)),
        ("FFN size", str(arch.intermediate_size)),
        ("attention heads", f"{arch.num_attention_heads} query, {arch.num_kv_heads} key/value"),
        ("head dim", str(arch.head_dim)),
        ("vocabulary", str(arch.vocab_size)),
        ("context", f"{arch.max_position_embeddings} tokens"),
        *_norm_and_positions(arch, rope),
        ("tied embeddings", _yes_no(arch.tie_word_embeddings)),
        ("QKV bias", _yes_no(arch.attention_bias)),
        *_window_rows(arch),
        *_expert_rows(arch),
        *_pooling(arch),
    ])


def _expert_rows(arch) -> list[tuple[str, str]]:
    """Qwen3-MoE's experts, where the model has them."""
    if not arch.num_experts:
        return []
    sparse = sum(is_sparse_layer(arch, i) for i in range(arch.num_layers))
    weights = "renormalised" if arch.norm_topk_prob else "softmax weights as they are"
    return [("experts", f"{arch.num_experts} of FFN size {arch.moe_intermediate_size}, {arch.num_experts_per_tok} "
                        f"a token ({weights}), in {sparse} of {arch.num_layers} layers")]


def _window_rows(arch) -> list[tuple[str, str]]:
    """Gemma 3's local layers, or a window on every layer (Mistral, Phi-3), where the model has them."""
    if arch.sliding_window is None:
        return []
    pattern = arch.sliding_window_pattern
    if pattern is None:
        return [("sliding window", f"{arch.sliding_window} tokens, every layer")]
    return [("sliding window", f"{arch.sliding_window} tokens, {pattern - 1} local layers to 1 global"),
            ("local RoPE", f"theta {arch.rope_local_theta:g}")]


def _norm_and_positions(arch, rope: str) -> list[tuple[str, str]]:
    """An encoder has LayerNorm and learned absolute positions; a decoder RMSNorm and RoPE."""
    if arch.architecture in ENCODER_ARCHITECTURES:
        return [("LayerNorm eps", f"{arch.rms_norm_eps:g}"), ("positions", "absolute (learned)")]
    return [("RMS norm eps", f"{arch.rms_norm_eps:g}"), ("RoPE", rope)]


def _pooling(arch) -> list[tuple[str, str]]:
    pooling = arch.pooling
    if pooling is None:
        return []
    normalized = ", L2-normalized" if pooling.normalize else ""
    return [("embeddings", f"{pooling.mode} pooling{normalized}, {arch.hidden_size} dims, "
                           f"inputs up to {pooling.max_tokens} tokens")]


def _tokenizer(tok: TokenizerSpec) -> str:
    template = f"{len(tok.chat_template)} characters" if tok.chat_template else "none"
    return _section("tokenizer", [
        ("tokens", _token_count(tok.tokenizer_json)),
        ("BOS", f"{tok.bos_token!r} (id {tok.bos_token_id}), prepended: {_yes_no(tok.add_bos_token)}"),
        ("EOS", f"{tok.eos_token!r} (ids {list(tok.eos_token_ids)}), appended: {_yes_no(tok.add_eos_token)}"),
        ("pad id", str(tok.pad_token_id)),
        ("chat template", template),
    ])


def _token_count(tokenizer_json: str) -> str:
    try:
        data = json.loads(tokenizer_json)
        vocab = data["model"]["vocab"]
        ids = set(vocab.values()) if isinstance(vocab, dict) else set(range(len(vocab)))
        ids.update(token["id"] for token in data.get("added_tokens") or [])
    except (ValueError, KeyError, TypeError, AttributeError):
        return "unreadable tokenizer.json"
    return f"{len(ids)} ({data['model'].get('type', '?')})"


def _tensors(header: ModelHeader) -> str:
    name_width = max((len(spec.name) for spec in header.tensors), default=4)
    lines = [f"tensors ({len(header.tensors)})",
             f"  {'name':<{name_width}}  {'encoding':<8}  {'shape':<14}  {'bytes':>12}"]
    for spec in header.tensors:
        shape = "x".join(str(dim) for dim in spec.shape)
        nbytes = tensor_nbytes(spec)
        lines.append(f"  {spec.name:<{name_width}}  {spec.encoding:<8}  {shape:<14}  {nbytes:>12,}")
    counts = Counter(spec.encoding for spec in header.tensors)
    sizes = Counter()
    for spec in header.tensors:
        sizes[spec.encoding] += tensor_nbytes(spec)
    summary = ", ".join(f"{enc} {counts[enc]} ({_mb(sizes[enc])})" for enc in sorted(counts))
    lines.append(f"  by encoding: {summary}")
    return "\n".join(lines)


def _plan(header: ModelHeader) -> str:
    plan = header.precision_plan
    rows = [("default", plan.default)]
    rows += [(f"override {pattern}", precision) for pattern, precision in plan.overrides]
    return _section("precision plan", rows)


def _lineage(header: ModelHeader) -> str:
    lineage = header.lineage
    recipe = ", ".join(f"{key}={value}" for key, value in sorted(lineage.recipe.items()))
    return _section("lineage", [
        ("source", f"{lineage.source_name} ({lineage.source_format})"),
        ("source sha256", lineage.source_sha256),
        ("compiler", f"mcp2026 {lineage.compiler_version}"),
        ("recipe", recipe or "-"),
        ("created", lineage.created_at),
        ("license", lineage.license or "unknown"),
        ("base model", lineage.base_model or "-"),
    ])


def _datasets(header: ModelHeader) -> str:
    """Data lineage: one block per declared dataset."""
    datasets = header.lineage.datasets
    if not datasets:
        return "datasets\n  none declared (compile with --lineage FILE or --dataset to record them)"
    blocks = []
    for dataset in datasets:
        blocks.append(_section(f"  {dataset.name}", [
            ("  license", dataset.license or "unknown"),
            ("  sha256", dataset.sha256 or "-"),
            ("  source", dataset.source or "-"),
            ("  preprocessing", " -> ".join(dataset.preprocessing) or "-"),
        ]))
    return "\n".join([f"datasets ({len(datasets)})", *blocks])


def _totals(model: ModelFile) -> str:
    specs = model.header.tensors
    parameters = sum(math.prod(spec.shape) for spec in specs if not spec.name.endswith(COMPANION_SUFFIXES))
    tensor_bytes = sum(tensor_nbytes(spec) for spec in specs)
    size = model.path.stat().st_size
    return _section("totals", [
        ("parameters", f"{parameters:,}"),
        ("tensor data", f"{tensor_bytes:,} bytes ({_mb(tensor_bytes)})"),
        ("file size", f"{size:,} bytes ({_mb(size)})"),
    ])


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB"


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"
