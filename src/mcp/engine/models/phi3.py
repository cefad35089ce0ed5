"""The Phi-3 decoder: Phi-3 mini/small-context/medium and Phi-4-mini (Hugging Face ``phi3``).

Llama's layer (models/llama.py) with what Hugging Face's ``Phi3ForCausalLM`` does differently:
- q/k/v are one stored matrix (``qkv_proj``: rows q, then k, then v) and gate/up another
  (``gate_up_proj``: gate, then up); each is used as loaded, one GEMM, no copy;
- partial rotary (Phi-4-mini: ``partial_rotary_factor`` 0.75): RoPE turns the first
  ``rotary_dim`` dims of each head (layers/rotary.py);
- LongRoPE scaling: the frequencies are divided by the short factors, or by the long ones when
  this engine's context runs past ``original_max_position_embeddings``, and cos/sin are
  multiplied by the attention factor. transformers picks the set per forward (long once a
  forward reaches past the original length); the choice here is made once, by the context
  the model is loaded with, as llama.cpp makes it, so that every cached key keeps one rotation.
  The two agree whenever the context stays within the original length, and for a sequence
  whose whole prompt, already past it, runs in one forward;
- a ``sliding_window`` where the config sets one (every layer), as Mistral's.

Also runs the native decode step (models/llama_step.py): partial rotary as the RoPE tables'
width, the LongRoPE factors and attention factor inside the tables, the window on every layer.
"""

from __future__ import annotations

import torch

from mcp.engine.layers.linear import LinearGroup
from mcp.engine.layers.rotary import RotaryEmbedding, inverse_frequencies
from mcp.engine.models.llama import DecoderLayer, LlamaForCausalLM
from mcp.engine.weights import ModelWeights
from mcp.modelfile.spec import ArchitectureConfig


class Phi3DecoderLayer(DecoderLayer):
    @staticmethod
    def qkv_proj(arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> LinearGroup:
        q_rows, kv_rows = arch.num_attention_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
        return LinearGroup([weights.linear(f"{prefix}.qkv_proj")], sizes=[q_rows, kv_rows, kv_rows])

    @staticmethod
    def gate_up_proj(arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> LinearGroup:
        size = arch.intermediate_size
        return LinearGroup([weights.linear(f"{prefix}.gate_up_proj")], sizes=[size, size])


class Phi3ForCausalLM(LlamaForCausalLM):
    layer_class = Phi3DecoderLayer

    @staticmethod
    def rotary_embedding(arch: ArchitectureConfig, weights: ModelWeights, max_positions: int,
                         dtype: torch.dtype) -> RotaryEmbedding:
        scaling = arch.rope_scaling
        if scaling is None or scaling.kind != "longrope":
            return LlamaForCausalLM.rotary_embedding(arch, weights, max_positions, dtype)
        factors = weights.tensor(f"model.rope_factors_{longrope_set(arch, max_positions)}")
        return RotaryEmbedding(inverse_frequencies(arch, factors), max_positions, dtype, scaling.attention_factor)


def longrope_set(arch: ArchitectureConfig, max_positions: int) -> str:
    """"long" where a sequence may run past the original context, else "short" (llama.cpp's rule)."""
    return "long" if max_positions > arch.rope_scaling.original_max_position_embeddings else "short"
