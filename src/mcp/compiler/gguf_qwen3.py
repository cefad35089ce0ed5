"""GGUF architectures "qwen3" and "qwen3moe" as compile sources: their names and expert fields.

Both add per-head q/k norms (``attn_q_norm``, ``attn_k_norm``) to Llama's tensors; llama.cpp's
converter leaves Q and K rows as Hugging Face has them (no permutation). "qwen3moe" layers hold
a router (``ffn_gate_inp`` [experts, hidden]) and the experts stacked, one tensor per projection:
``ffn_gate_exps`` / ``ffn_up_exps`` [experts, moe_ffn, hidden], ``ffn_down_exps`` [experts,
hidden, moe_ffn] (numpy order). The ``.mcp`` stores one matrix per expert, as Hugging Face does:
expert e is rows e*R .. (e+1)*R - 1 of the stacked array, whole rows of blocks, so the split is a
view of the memory-mapped file and nothing is re-quantized; each expert is then a matrix like
any other to the precision plan and the native kernels, and the loader needs no stacked form.

The file does not say how the top-k weights are normalised: llama.cpp renormalises them for
"qwen3moe" (``build_moe_ffn(..., norm_w = true)``), as do Qwen3-MoE's configs
(``norm_topk_prob``); ``expert_weights_norm``, where a converter writes it, is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gguf import ReaderTensor

from mcp.base.errors import ModelFormatError
from mcp.compiler.compiler import SourceTensor
from mcp.modelfile.spec import stored_shape

FAMILIES = {"qwen3": "qwen3", "qwen3moe": "qwen3_moe"}  # GGUF general.architecture -> the .mcp family
LAYER_NAMES = {
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "ffn_gate_inp.weight": "mlp.gate.weight",
    "ffn_gate_exps.weight": "mlp.experts.gate_proj.weight",
    "ffn_up_exps.weight": "mlp.experts.up_proj.weight",
    "ffn_down_exps.weight": "mlp.experts.down_proj.weight",
}
_ROUTER = re.compile(r"blk\.(\d+)\.ffn_gate_inp\.weight")
_DENSE_MLP = re.compile(r"blk\.(\d+)\.ffn_gate\.weight")


def moe_fields(path: Path, get, count, tensors: dict[str, ReaderTensor]) -> dict[str, Any]:
    """The expert fields of a "qwen3moe" file: counts from its metadata (the expert count checked
    against the router's rows), the layers without a router as ``mlp_only_layers``."""
    experts = count("expert_count")
    routers = {int(m.group(1)): t for name, t in tensors.items() if (m := _ROUTER.fullmatch(name))}
    if not routers:
        raise ModelFormatError(f"{path}: a qwen3moe GGUF without a router (blk.N.ffn_gate_inp.weight) in any layer")
    for layer, router in routers.items():
        if int(router.shape[-1]) != experts:  # ne order: [hidden, experts]
            raise ModelFormatError(f"{path}: blk.{layer}.ffn_gate_inp.weight has {int(router.shape[-1])} rows; "
                                   f"GGUF metadata qwen3moe.expert_count says {experts}")
    dense = sorted(int(m.group(1)) for name in tensors if (m := _DENSE_MLP.fullmatch(name)))
    return {"num_experts": experts, "num_experts_per_tok": count("expert_used_count"),
            "moe_intermediate_size": count("expert_feed_forward_length"),
            "norm_topk_prob": bool(get("expert_weights_norm", True)), "decoder_sparse_step": 1,
            "mlp_only_layers": tuple(dense)}


def is_stacked_experts(mcp_name: str) -> bool:
    return mcp_name.endswith(("mlp.experts.gate_proj.weight", "mlp.experts.up_proj.weight",
                              "mlp.experts.down_proj.weight"))


def split_experts(tensor: ReaderTensor, name: str, encoding: str, shape: tuple[int, ...]) -> tuple[SourceTensor, ...]:
    """The stacked tensor ``name`` (logical ``shape`` [experts, rows, cols]) as one [rows, cols]
    ``SourceTensor`` per expert, ``...mlp.experts.{e}.<projection>.weight``."""
    experts, rows, cols = shape
    head, projection = name.rsplit(".experts.", 1)

    def load(expert: int):
        stacked = tensor.data.reshape(experts * rows, -1)  # one row a matrix row, whatever the encoding
        part = stacked[expert * rows:(expert + 1) * rows]
        if encoding == "bf16":  # the reader gives raw bytes; the view needs a writable copy
            return torch.from_numpy(np.array(part)).reshape(-1).view(torch.bfloat16).reshape(rows, cols)
        return part.reshape(stored_shape(encoding, (rows, cols)))

    return tuple(SourceTensor(f"{head}.experts.{e}.{projection}", encoding, (rows, cols), lambda e=e: load(e))
                 for e in range(experts))
