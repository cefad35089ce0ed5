"""Hugging Face Qwen3 and Qwen3-MoE folders (``model_type`` "qwen3", "qwen3_moe") as compile sources.

Their configs are Llama's (``hf_source`` reads those fields) plus what makes the family: q/k
RMSNorm (always on, nothing in the config), ``head_dim`` given apart from hidden / heads, and for
Qwen3-MoE the experts: ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``,
``norm_topk_prob``, ``decoder_sparse_step`` and ``mlp_only_layers``, as transformers'
``Qwen3MoeDecoderLayer`` reads them. Tensors are already the ``.mcp`` names (the experts one
matrix each, as the checkpoints and transformers' ``save_pretrained`` write them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.base.errors import UnsupportedModelError
from mcp.modelfile.spec import ArchitectureConfig

MODEL_TYPES = {"qwen3": "qwen3", "qwen3_moe": "qwen3_moe"}  # HF model_type -> the .mcp family


def qwen3_architecture(folder: Path, config: dict[str, Any], base: dict[str, Any]) -> ArchitectureConfig:
    """The architecture from ``config``; ``base`` holds the fields read as for Llama."""
    if base["attention_bias"]:
        raise UnsupportedModelError(f"{folder}: attention_bias is not supported for Qwen3 (its checkpoints "
                                    "have none, and it would put a bias on o_proj too)")
    if config.get("use_sliding_window"):
        raise UnsupportedModelError(f"{folder}: use_sliding_window is not supported for Qwen3 (a window on the "
                                    "layers from max_window_layers on); its checkpoints leave it false")
    family = MODEL_TYPES[config["model_type"]]
    return ArchitectureConfig(**{**base, "architecture": family}, **(_moe_fields(config) if family == "qwen3_moe" else {}))


def _moe_fields(config: dict[str, Any]) -> dict[str, Any]:
    return {
        # the checkpoints' name, and transformers 5's (Qwen3MoeConfig maps one to the other)
        "num_experts": int(config["num_experts"] if "num_experts" in config else config["num_local_experts"]),
        "num_experts_per_tok": int(config["num_experts_per_tok"]),
        "moe_intermediate_size": int(config["moe_intermediate_size"]),
        "norm_topk_prob": bool(config.get("norm_topk_prob", False)),
        "decoder_sparse_step": int(config.get("decoder_sparse_step", 1)),
        "mlp_only_layers": tuple(int(i) for i in config.get("mlp_only_layers") or ()),
    }
