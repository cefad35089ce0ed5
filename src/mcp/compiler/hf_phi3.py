"""A Hugging Face Phi-3 folder (``model_type`` "phi3": Phi-3 mini/medium, Phi-3.5-mini, Phi-4-mini)
as a compile source.

Its tensors keep their names and their fusion (``qkv_proj``, ``gate_up_proj``: the engine uses
each as one matrix). Its config adds to Llama's: ``partial_rotary_factor`` (the rotated share of
a head), LongRoPE scaling (``rope_type`` "longrope", or "su"/"yarn", which transformers reads
as longrope for Phi-3) with a short and a long list of frequency factors, which become the
tensors ``model.rope_factors_short`` / ``_long`` (as llama.cpp's GGUF holds them), and an
attention factor resolved here exactly as transformers' ``_compute_longrope_parameters`` does;
and a ``sliding_window`` on every layer where it is set.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.compiler.compiler import SourceTensor
from mcp.modelfile.spec import ArchitectureConfig, RopeScaling

MODEL_TYPE = "phi3"
PHI3_ORIGINAL_CONTEXT = 4096  # Phi3Config's original_max_position_embeddings when a config omits it


def phi3_architecture(folder: Path, config: dict[str, Any], base: dict[str, Any]) -> ArchitectureConfig:
    """The architecture from ``config``; ``base`` holds the fields read as for Llama (less RoPE scaling)."""
    params = rope_parameters(config)
    head_dim = int(base["head_dim"])
    partial = float(params.get("partial_rotary_factor") or config.get("partial_rotary_factor") or 1.0)
    rotary_dim = int(head_dim * partial)
    window = config.get("sliding_window")
    return ArchitectureConfig(
        **{**base, "architecture": MODEL_TYPE, "rope_scaling": _longrope(folder, config, params, base)},
        sliding_window=int(window) if window else None,
        rotary_dim=None if rotary_dim == head_dim else rotary_dim,
    )


def rope_parameters(config: dict[str, Any]) -> dict[str, Any]:
    """transformers 5's ``rope_parameters``, or 4.x's ``rope_scaling`` (with ``rope_theta`` beside it)."""
    return dict(config.get("rope_parameters") or config.get("rope_scaling") or {})


def rope_factor_tensors(config: dict[str, Any]) -> list[SourceTensor]:
    """The short and long factor lists as f32 tensors (none without LongRoPE)."""
    params = rope_parameters(config)
    if _kind(params) != "longrope":
        return []
    return [_factor_tensor(f"model.rope_factors_{which}", params[f"{which}_factor"]) for which in ("long", "short")]


def _kind(params: dict[str, Any]) -> str:
    kind = params.get("rope_type") or params.get("type") or "default"
    return "longrope" if kind in ("su", "yarn") else kind  # as Phi3Config.convert_rope_params_to_dict


def _longrope(folder: Path, config: dict[str, Any], params: dict[str, Any], base: dict[str, Any]) -> RopeScaling | None:
    kind = _kind(params)
    if kind == "default":
        return None
    if kind != "longrope":
        raise UnsupportedModelError(f"{folder}: RoPE scaling {kind!r} is not supported for Phi-3 (longrope is)")
    # Phi3Config's own original_max_position_embeddings wins over the one in the RoPE parameters
    original = int(config.get("original_max_position_embeddings") or params.get("original_max_position_embeddings")
                   or PHI3_ORIGINAL_CONTEXT)
    factor = params.get("factor")
    factor = base["max_position_embeddings"] / original if factor is None else float(factor)
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    rotated = int(int(base["head_dim"]) * float(params.get("partial_rotary_factor")
                                                 or config.get("partial_rotary_factor") or 1.0))
    for which in ("short_factor", "long_factor"):
        if not isinstance(params.get(which), list) or len(params[which]) != rotated // 2:
            raise ModelFormatError(f"{folder}/config.json: rope {which} must be a list of {rotated // 2} numbers")
    return RopeScaling(kind="longrope", factor=float(factor), original_max_position_embeddings=original,
                       attention_factor=float(attention))


def _factor_tensor(name: str, values: list[float]) -> SourceTensor:
    return SourceTensor(name, "f32", (len(values),), lambda: torch.tensor(values, dtype=torch.float32))
