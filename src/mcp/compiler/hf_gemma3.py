"""A Hugging Face Gemma 3 text folder (``model_type`` "gemma3_text") as a compile source.

Its config differs from Llama's in what ``hf_source`` reads: the layer pattern (``layer_types``:
every n-th layer "full_attention", the others "sliding_attention"), two RoPE bases (transformers
5's ``rope_parameters`` per layer type, or 4.x's ``rope_theta`` and ``rope_local_base_freq``),
``query_pre_attn_scalar`` and a GELU-tanh MLP. Gemma's RMSNorm multiplies by ``(1 + w)``; the
``.mcp`` stores that multiplier (as llama.cpp's GGUF does), so 1 is added to every norm weight
here, in fp32 as transformers computes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from mcp.base.errors import UnsupportedModelError
from mcp.compiler.compiler import SourceTensor
from mcp.modelfile.spec import ArchitectureConfig, RopeScaling

MODEL_TYPE = "gemma3_text"


def gemma3_architecture(folder: Path, config: dict[str, Any], base: dict[str, Any],
                        rope_scaling: RopeScaling | None) -> ArchitectureConfig:
    """The architecture from ``config``; ``base`` holds the fields read as for Llama."""
    _check_supported(folder, config)
    full, local = _rope_bases(config)
    head_dim = int(base["head_dim"])
    return ArchitectureConfig(
        **{**base, "architecture": "gemma3", "rope_theta": full, "rope_scaling": rope_scaling},
        sliding_window=int(config["sliding_window"]),
        sliding_window_pattern=_pattern(folder, config),
        rope_local_theta=local,
        query_pre_attn_scalar=float(config.get("query_pre_attn_scalar") or head_dim),
    )


def gemma3_tensor(tensor: SourceTensor) -> SourceTensor:
    """Norm weights become Gemma's multiplier (1 + w), fp32; other tensors stay as they are."""
    if not tensor.name.endswith("norm.weight"):
        return tensor
    return SourceTensor(tensor.name, "f32", tensor.shape, lambda: tensor.load().to(torch.float32) + 1.0)


def rope_parameters_of(config: dict[str, Any]) -> dict[str, Any]:
    """The global layers' RoPE parameters (transformers 5 nests them by layer type)."""
    params = config.get("rope_parameters") or {}
    return dict(params.get("full_attention") or config.get("rope_scaling") or {})


def _check_supported(folder: Path, config: dict[str, Any]) -> None:
    activation = config.get("hidden_activation") or config.get("hidden_act")
    if activation != "gelu_pytorch_tanh":
        raise UnsupportedModelError(f"{folder}: hidden_activation {activation!r} is not supported "
                                    "(gelu_pytorch_tanh is)")
    for name in ("attn_logit_softcapping", "final_logit_softcapping"):
        if config.get(name) is not None:
            raise UnsupportedModelError(f"{folder}: {name} is not supported (Gemma 3 leaves it null)")
    if config.get("use_bidirectional_attention"):
        raise UnsupportedModelError(f"{folder}: bidirectional attention (an embedding Gemma) is not supported")
    if not config.get("sliding_window"):
        raise UnsupportedModelError(f"{folder}: a Gemma 3 config without sliding_window is not supported")


def _rope_bases(config: dict[str, Any]) -> tuple[float, float]:
    params = config.get("rope_parameters") or {}
    if "full_attention" in params:
        local = params.get("sliding_attention") or {}
        if (local.get("rope_type") or "default") != "default":
            raise UnsupportedModelError("RoPE scaling on Gemma 3's local layers is not supported")
        return float(params["full_attention"]["rope_theta"]), float(local.get("rope_theta", 10000.0))
    return float(config.get("rope_theta", 1000000.0)), float(config.get("rope_local_base_freq", 10000.0))


def _pattern(folder: Path, config: dict[str, Any]) -> int:
    """n where every n-th layer is global; a ``layer_types`` list of another shape is refused."""
    layers = int(config["num_hidden_layers"])
    types = config.get("layer_types")
    pattern = int(config.get("sliding_window_pattern") or config.get("_sliding_window_pattern") or 6)
    if types is None:
        return pattern
    if "full_attention" in types:
        pattern = types.index("full_attention") + 1
    expected = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if list(types) != expected:
        raise UnsupportedModelError(f"{folder}: layer_types must repeat {pattern - 1} sliding layers then one "
                                    "full layer, as Gemma 3's do")
    return pattern
