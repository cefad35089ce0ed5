"""A native step for the Llama family, Gemma 3 and Qwen3(-MoE): every layer of a short step in one C++ call.

For a step whose rows each bring one token at its own position (one row per decoding
sequence, one per token of a prefill chunk), ``NativeDecodeStep`` runs RMSNorm, the fused
q/k/v projection, RoPE, the KV write into the paged cache (``kv/paged.py``, in place),
grouped-query attention over each row's blocks (a dropped block, -1 in the table, is
hidden), o_proj + residual, RMSNorm, gate/up SwiGLU and down + residual for every layer,
then the final RMSNorm, in ``mcp.engine.kernels._cpu.decode_step`` (csrc/decode.cpp). It
reads the model's own packed matrices and norm weights and the storage's own cache tensors
through pointers taken once here; longer steps and every other model keep the torch modules.
A chunk's rows write their keys and values before any row attends (per layer), so each row
attends to the chunk's earlier tokens as the causal mask would let it.

Gemma 3 (``models/gemma3.py``) runs the same step with its differences as data: per-head q/k
norms before RoPE, norms of the attention's and the MLP's outputs, GELU for SiLU, its attention
scale, and windowed layers with their own RoPE tables that see the last ``sliding_window``
positions through the windowed pool's block tables (``kv/hybrid.py``), or through the one table
of a single pool. Qwen3 (dense) is Llama with Gemma's q/k norms; a Llama-family model with a
sliding window (Mistral, Phi-3) has every layer windowed, over its one pool; Phi-3's partial rotary
turns the first ``rotary_dim`` dims of each head (the RoPE tables' width), its LongRoPE factors and
attention factor are in the tables. Qwen3-MoE's layers of experts (``SparseMoE``) run its router
(fp32, as the plan keeps it), top-k softmax weights renormalised as ``norm_topk_prob`` says, and
the chosen experts' SwiGLU on the native kernels, each chosen expert once over all the rows that
chose it (csrc/moe.inc); its dense layers (``mlp_only_layers``, ``decoder_sparse_step``) run
the dense MLP.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mcp.engine import kernels
from mcp.engine.kernels import KIND_CODES, QuantMatrix
from mcp.engine.kv.hybrid import HybridKVStorage
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.layers.linear import Linear, LinearGroup, NativeLinear
from mcp.engine.layers.mlp import SwiGLU
from mcp.engine.layers.moe import SparseMoE
from mcp.engine.models import sliding_window_layers
from mcp.engine.models.gemma3 import Gemma3ForCausalLM
from mcp.engine.models.llama import LlamaForCausalLM
from mcp.engine.models.phi3 import Phi3ForCausalLM
from mcp.engine.models.qwen3 import Qwen3ForCausalLM
from mcp.modelfile.spec import ArchitectureConfig

NATIVE_FAMILIES = (LlamaForCausalLM, Gemma3ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM)

MAX_PARTS = 3  # a matrix stacked from parts of different kinds (csrc/decode.h, kMaxParts)
MAX_ROWS = 256  # what decode_step accepts; the runner sends at most the plan's decode rows
MATRIX_FIELDS = 3 + 5 * MAX_PARTS  # a matrix's fields in the tables (_matrix_fields)


class NativeDecodeStep:
    """Decode steps of ``model`` over ``storage``; build with ``for_model`` (None if unsupported)."""

    def __init__(self, model: LlamaForCausalLM | Gemma3ForCausalLM, storage: PagedKVStorage | HybridKVStorage) -> None:
        problem = unsupported(model, storage)
        if problem:
            raise ValueError(f"the native decode step cannot run this model: {problem}")
        self.model, self.storage = model, storage  # keep every tensor the tables point into alive
        self.x_digits = _parts(model.layers[0].self_attn.o_proj)[0].x_digits
        self._kept: list[torch.Tensor] = []  # what the tables point into: fused q/k/v biases, experts' tables
        windowed = sliding_window_layers(model.arch)
        self._layers = torch.tensor([_layer_row(layer, cache, self._kept, window)
                                     for layer, cache, window in zip(model.layers, storage.layers, windowed)],
                                    dtype=torch.int64)  # [L, 84]
        self._rotaries = (model.rotary, getattr(model, "local_rotary", model.rotary))
        self._dims = torch.tensor(_dims(model, storage), dtype=torch.int64)
        self._rope_rows = 0  # the RoPE rows the step may read, dims[7] (filled as positions are reached)
        self._eps = float(model.arch.rms_norm_eps)
        self._hybrid = isinstance(storage, HybridKVStorage)

    @classmethod
    def for_model(cls, model: torch.nn.Module, storage: PagedKVStorage | HybridKVStorage) -> NativeDecodeStep | None:
        return None if unsupported(model, storage) else cls(model, storage)

    def __call__(self, x: torch.Tensor, positions: Sequence[int], tables: Sequence[Sequence[int]],
                 local_tables: Sequence[Sequence[int]] | None = None) -> torch.Tensor:
        """Embedded tokens x [M, hidden] fp32 (overwritten) at ``positions`` [M], row m's
        blocks ``tables[m]`` (-1: dropped) and, over a HybridKVStorage, its windowed layers'
        blocks ``local_tables[m]`` -> the final hidden states [M, hidden] (x itself)."""
        rows, hidden = len(positions), self.model.arch.hidden_size
        if x.dtype != torch.float32 or tuple(x.shape) != (rows, hidden) or not x.is_contiguous() or not x.is_cpu:
            raise ValueError(f"x must be a contiguous CPU float32 tensor [{rows}, {hidden}], "
                             f"got {x.dtype} {list(x.shape)}")
        if len(tables) != rows or not 1 <= rows <= MAX_ROWS:
            raise ValueError(f"a step takes 1..{MAX_ROWS} rows with one block table each, "
                             f"got {rows} positions and {len(tables)} tables")
        if (local_tables is not None) != self._hybrid or (local_tables is not None and len(local_tables) != rows):
            raise ValueError("give local_tables, one per row, exactly when the KV storage is a HybridKVStorage")
        table = _padded(tables)  # [M, blocks]
        local = table if local_tables is None else _padded(local_tables)  # [M, local blocks]
        where = torch.tensor(list(positions), dtype=torch.int64)  # [M]
        self._fill_rope(max(positions) + 1)
        kernels._cpu.decode_step(self._layers.data_ptr(), len(self.model.layers), self._dims.data_ptr(), self._eps,
                                 x.data_ptr(), rows, where.data_ptr(), table.data_ptr(), table.shape[1], self.x_digits,
                                 torch.get_num_threads(), local.data_ptr(), local.shape[1])
        return x

    def _fill_rope(self, num_positions: int) -> None:
        """Fill the RoPE tables' rows up to ``num_positions`` and let the step read them (rows past
        dims[7] are refused there; the tables' pointers stay the same)."""
        if num_positions > self._rope_rows:
            for rotary in self._rotaries:
                rotary.fill(num_positions)
            self._rope_rows = min(rotary.num_rows for rotary in self._rotaries)
            self._dims[7] = self._rope_rows


def _padded(tables: Sequence[Sequence[int]]) -> torch.Tensor:
    width = max(len(table) for table in tables)
    return torch.tensor([list(t) + [-1] * (width - len(t)) for t in tables], dtype=torch.int64)


def _dims(model: LlamaForCausalLM | Gemma3ForCausalLM, storage: PagedKVStorage | HybridKVStorage) -> list[int]:
    """The step's dims vector (csrc/module.cpp, read_dims); its RoPE rows (dims[7]) are set as the
    tables fill (``NativeDecodeStep._fill_rope``)."""
    arch, rotary = model.arch, model.rotary
    pools = (storage.full, storage.local) if isinstance(storage, HybridKVStorage) else (storage, storage)
    dims = [arch.hidden_size, arch.num_attention_heads, arch.num_kv_heads, arch.head_dim, arch.intermediate_size,
            pools[0].num_blocks, storage.block_size, 0, rotary.cos.data_ptr(),
            rotary.sin_signed.data_ptr(), model.norm.weight.data_ptr(), int(storage.dtype == torch.float16)]
    window, rotary_dim = arch.sliding_window or 0, rotary.cos.shape[1]  # tables [positions, rotary_dim]
    experts = [arch.num_experts, arch.num_experts_per_tok, arch.moe_intermediate_size, int(arch.norm_topk_prob)] \
        if any(isinstance(layer.mlp, SparseMoE) for layer in model.layers) else [0, 0, 0, 0]
    if isinstance(model, LlamaForCausalLM):  # 1 / sqrt(D), SiLU; a window (Mistral's, Phi-3's) on every layer
        return dims + [0, 0, window, rotary.cos.data_ptr(), rotary.sin_signed.data_ptr(), pools[1].num_blocks,
                       rotary_dim, *experts]
    scale = torch.tensor([model.layers[0].self_attn.scale], dtype=torch.float32).view(torch.int32).item()
    local = model.local_rotary
    return dims + [scale & 0xFFFFFFFF, 1, window, local.cos.data_ptr(), local.sin_signed.data_ptr(),
                   pools[1].num_blocks, rotary_dim, *experts]


def unsupported(model: torch.nn.Module, storage: PagedKVStorage | HybridKVStorage) -> str:
    """Why the native step cannot run ``model`` over ``storage``, or "" when it can."""
    if type(model) not in NATIVE_FAMILIES:
        return f"the native step runs the Llama family, Gemma 3, Qwen3(-MoE) and Phi-3, not {type(model).__name__}"
    if not kernels.available():
        return f"the native kernels are not built ({kernels.BUILD_ERROR})"
    if model.dtype != torch.float32 or storage.dtype not in (torch.float32, torch.float16):
        return (f"activations must be float32 and the KV cache float32 or float16, not {model.dtype} and "
                f"{storage.dtype}")
    if model.embed_tokens.device.type != "cpu":
        return "the model is not on the CPU"
    for index, layer in enumerate(model.layers):
        problem = _matrices_unsupported(f"layer {index}", [("qkv", layer.self_attn.qkv_proj),
                                                           ("o", layer.self_attn.o_proj), *_mlp_matrices(layer.mlp)])
        if problem:
            return problem
        if isinstance(layer.mlp, SparseMoE):
            problem = _router_unsupported(index, layer.mlp, model.arch)
            if problem:
                return problem
    dots = {p.x_digits for layer in model.layers for _, m in [("qkv", layer.self_attn.qkv_proj),
                                                               *_mlp_matrices(layer.mlp)] for p in _parts(m)}
    return "" if len(dots) == 1 else "the layers mix dots of different activation digits"


def _mlp_matrices(mlp: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """A dense MLP's gate_up and down, or every expert's."""
    if isinstance(mlp, SparseMoE):
        return [(f"expert {e} {name}", module) for e, expert in enumerate(mlp.experts)
                for name, module in (("gate_up", expert.gate_up_proj), ("down", expert.down_proj))]
    if isinstance(mlp, SwiGLU):
        return [("gate_up", mlp.gate_up_proj), ("down", mlp.down_proj)]
    return [(f"{type(mlp).__name__} MLP", mlp)]  # refused below: not a native matrix


def _matrices_unsupported(where: str, matrices: list[tuple[str, torch.nn.Module]]) -> str:
    for name, module in matrices:
        parts = _parts(module)
        if parts is None:
            return f"{where} {name} does not run the native kernels"
        if any(p.bias is not None for p in parts) and name != "qkv":
            return f"{where} {name} has a bias"
    return ""


def _router_unsupported(index: int, moe: SparseMoE, arch: ArchitectureConfig) -> str:
    """The step reads a router as fp32 [experts, hidden] and routes as the config says."""
    router = moe.router
    if not isinstance(router, Linear) or router.bias is not None or router.weight.dtype != torch.float32 or \
            not router.weight.is_contiguous():
        return f"layer {index}'s router is not a dense fp32 matrix without a bias"
    if (len(moe.experts), moe.top_k, moe.normalize) != \
            (arch.num_experts, arch.num_experts_per_tok, arch.norm_topk_prob):
        return f"layer {index}'s experts are not the config's ({arch.num_experts}, {arch.num_experts_per_tok} a token)"
    if moe.experts[0].down_proj.in_features != arch.moe_intermediate_size:
        return f"layer {index}'s experts are not moe_intermediate_size wide"
    return ""


def _parts(module: torch.nn.Module) -> list[NativeLinear] | None:
    """The native matrices behind a layer or a fused group, else None: one where the group's
    parts fused, up to MAX_PARTS where they differ in kind (LinearGroup keeps those apart)."""
    parts = list(module.parts) if isinstance(module, LinearGroup) else [module]
    if not 1 <= len(parts) <= MAX_PARTS or not all(isinstance(p, NativeLinear) for p in parts):
        return None
    return parts


def _matrix_fields(parts: list[NativeLinear]) -> list[int]:
    """parts, N, K, then (kind, codes, qparams, qparams_f16, rows) per part, padded to MAX_PARTS."""
    matrices: list[QuantMatrix] = [p.matrix for p in parts]
    fields = [len(matrices), sum(m.shape[0] for m in matrices), matrices[0].shape[1]]
    for m in matrices:
        qparams = m.qparams
        fields += [KIND_CODES[m.kind], m.codes.data_ptr(), 0 if qparams is None else qparams.data_ptr(),
                   int(qparams is not None and qparams.dtype == torch.float16), m.shape[0]]
    return fields + [0] * 5 * (MAX_PARTS - len(matrices))


def _bias(parts: list[NativeLinear], keep: list[torch.Tensor]) -> int:
    """The q/k/v bias pointer (0: none); stacked parts' biases joined into a tensor kept in ``keep``."""
    if all(p.bias is None for p in parts):
        return 0
    if len(parts) == 1:
        return _fp32(parts[0].bias).data_ptr()
    joined = torch.cat([_fp32(p.bias) if p.bias is not None else torch.zeros(p.out_features) for p in parts])
    keep.append(joined)
    return joined.data_ptr()


def _layer_row(layer: torch.nn.Module, cache, keep: list[torch.Tensor], windowed: bool) -> list[int]:
    """The decode step's table row for one layer (csrc/module.cpp, read_layer)."""
    attn, mlp = layer.self_attn, layer.mlp
    qkv = _parts(attn.qkv_proj)
    gemma = hasattr(layer, "pre_feedforward_layernorm")  # Gemma3DecoderLayer: four norms a layer
    before_mlp = layer.pre_feedforward_layernorm if gemma else layer.post_attention_layernorm
    extra = [0, 0, 0, 0, int(windowed)]
    if hasattr(attn, "q_norm"):  # QKNormAttention: Gemma 3, Qwen3
        extra[:2] = [_fp32(attn.q_norm.weight).data_ptr(), _fp32(attn.k_norm.weight).data_ptr()]
    if gemma:
        extra[2:4] = [_fp32(layer.post_attention_layernorm.weight).data_ptr(),
                      _fp32(layer.post_feedforward_layernorm.weight).data_ptr()]
    sparse = isinstance(mlp, SparseMoE)  # its experts' table instead of gate_up and down
    dense = [0] * 2 * MATRIX_FIELDS if sparse else [*_matrix_fields(_parts(mlp.gate_up_proj)),
                                                    *_matrix_fields(_parts(mlp.down_proj))]
    return [_fp32(layer.input_layernorm.weight).data_ptr(), *_matrix_fields(qkv), _bias(qkv, keep),
            *_matrix_fields(_parts(attn.o_proj)), _fp32(before_mlp.weight).data_ptr(), *dense,
            cache.keys.data_ptr(), cache.values.data_ptr(), *extra, *(_experts_fields(mlp, keep) if sparse else [0, 0])]


def _experts_fields(moe: SparseMoE, keep: list[torch.Tensor]) -> list[int]:
    """router, then the experts' table [experts, 2 * MATRIX_FIELDS] (each expert's gate_up, then
    its down; csrc/module.cpp, read_experts), kept in ``keep``."""
    table = torch.tensor([[*_matrix_fields(_parts(e.gate_up_proj)), *_matrix_fields(_parts(e.down_proj))]
                          for e in moe.experts], dtype=torch.int64)
    keep.append(table)
    return [_fp32(moe.router.weight).data_ptr(), table.data_ptr()]


def _fp32(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dtype != torch.float32 or not tensor.is_contiguous():
        raise ValueError(f"a norm weight or bias is {tensor.dtype}, shape {list(tensor.shape)}: the native step "
                         "reads contiguous float32")
    return tensor
