"""The Qwen3 families' tensors and checks: q/k norms, and the mixture-of-experts MLP.

Qwen3 (``architecture`` ``"qwen3"``) is a Llama layer with queries and keys RMS-normalised per
head before RoPE. Qwen3-MoE (``"qwen3_moe"``) adds sparse layers, whose MLP is a router
(``mlp.gate``, one logit per expert) and ``num_experts`` SwiGLU experts stored one matrix each,
under Hugging Face's names (``mlp.experts.{e}.gate_proj.weight``...): every expert is a plain
2-D matrix to the compiler, the precision plan and the loader, like any dense layer's (a GGUF's
stacked ``ffn_*_exps`` are split per expert by the compiler, row ranges of the same blocks).
A router is tiny ([experts, hidden]) and its logits make discrete choices, so it keeps its
source precision in the file and runs dense in fp32 (as llama.cpp keeps ``ffn_gate_inp`` F32).
"""

from __future__ import annotations

from mcp.base.errors import ModelFormatError
from mcp.modelfile.spec import ArchitectureConfig

QWEN3_ARCHITECTURES = ("qwen3", "qwen3_moe")
MOE_ARCHITECTURES = ("qwen3_moe",)
ROUTER_SUFFIX = ".mlp.gate.weight"


def is_sparse_layer(arch: ArchitectureConfig, index: int) -> bool:
    """Whether layer ``index``'s MLP is the mixture of experts (transformers' Qwen3MoeDecoderLayer)."""
    return (arch.num_experts > 0 and index not in arch.mlp_only_layers
            and (index + 1) % arch.decoder_sparse_step == 0)


def is_router(name: str) -> bool:
    return name.endswith(ROUTER_SUFFIX)


def qk_norm_shapes(arch: ArchitectureConfig, layer: str) -> dict[str, tuple[int, ...]]:
    return {f"{layer}.self_attn.q_norm.weight": (arch.head_dim,), f"{layer}.self_attn.k_norm.weight": (arch.head_dim,)}


def moe_tensor_shapes(arch: ArchitectureConfig, layer: str) -> dict[str, tuple[int, ...]]:
    """A sparse layer's MLP: the router [experts, hidden], then each expert's gate, up and down."""
    hidden, inner = arch.hidden_size, arch.moe_intermediate_size
    shapes: dict[str, tuple[int, ...]] = {f"{layer}.mlp.gate.weight": (arch.num_experts, hidden)}
    for expert in range(arch.num_experts):
        prefix = f"{layer}.mlp.experts.{expert}"
        shapes[f"{prefix}.gate_proj.weight"] = (inner, hidden)
        shapes[f"{prefix}.up_proj.weight"] = (inner, hidden)
        shapes[f"{prefix}.down_proj.weight"] = (hidden, inner)
    return shapes


def check_moe(arch: ArchitectureConfig, source: str, num_tensors: int, max_dim: int) -> None:
    """Expert counts that make sense for the family: none outside ``MOE_ARCHITECTURES``; at least
    one expert, 1 <= top-k <= experts, a positive width and step, ``mlp_only_layers`` among the
    layers, and no more experts than the file has tensors for (``expected_tensor_shapes`` must
    not become a loop over billions of names)."""
    if arch.architecture not in MOE_ARCHITECTURES:
        if arch.num_experts:
            raise ModelFormatError(f"{source}: architecture.num_experts is {arch.num_experts}; the "
                                   f"{arch.architecture!r} family has no experts (qwen3_moe does)")
        return
    for name in ("num_experts", "moe_intermediate_size", "decoder_sparse_step"):
        if not 1 <= getattr(arch, name) <= max_dim:
            raise ModelFormatError(f"{source}: architecture.{name} is {getattr(arch, name)}; "
                                   f"it must be between 1 and {max_dim}")
    if 3 * arch.num_experts > num_tensors:
        raise ModelFormatError(f"{source}: architecture.num_experts is {arch.num_experts} but the model holds "
                               f"only {num_tensors} tensors")
    if not 1 <= arch.num_experts_per_tok <= arch.num_experts:
        raise ModelFormatError(f"{source}: architecture.num_experts_per_tok is {arch.num_experts_per_tok}; "
                               f"it must be between 1 and num_experts ({arch.num_experts})")
    outside = [i for i in arch.mlp_only_layers if not 0 <= i < arch.num_layers]
    if outside:
        raise ModelFormatError(f"{source}: architecture.mlp_only_layers names layer {outside[0]}; "
                               f"the model has layers 0 to {arch.num_layers - 1}")
