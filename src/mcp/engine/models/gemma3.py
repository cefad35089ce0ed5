"""The Gemma 3 decoder (text): Gemma 3 270M, 1B and the text stack of the larger ones.

What differs from Llama (models/llama.py), as Hugging Face's ``Gemma3ForCausalLM`` computes it:
- layers alternate local and global attention: every ``sliding_window_pattern``-th layer is
  global (RoPE base ``rope_theta``, scaled as the config says), the others see the last
  ``sliding_window`` positions (RoPE base ``rope_local_theta``, unscaled);
- queries and keys are RMS-normalised per head before RoPE; the attention scale is
  ``query_pre_attn_scalar ** -0.5``;
- four norms a layer: before and after attention, before and after the MLP, each output
  normalised before it joins the residual;
- Gemma's RMSNorm multiplies by ``(1 + w)``: the ``.mcp`` stores that multiplier (llama.cpp's
  GGUF already does; the compiler adds 1 to a Hugging Face folder's ``w``), so the norm here is
  the plain one;
- GeGLU with tanh-approximated GELU; embeddings scaled by sqrt(hidden); a tied output head.

Runs on the torch modules (the native decode step is Llama's only).
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from mcp.engine.kv.cache import KVCache
from mcp.engine.kv.hybrid import HybridKVStorage
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.layers.attention import AttentionInputs, PagedAttentionInputs
from mcp.engine.layers.linear import LinearGroup
from mcp.engine.layers.mlp import SwiGLU
from mcp.engine.layers.norm import RMSNorm
from mcp.engine.layers.qk_norm import QKNormAttention
from mcp.engine.layers.rotary import RotaryEmbedding, inverse_frequencies
from mcp.engine.layers.window import windowed
from mcp.engine.models import sliding_window_layers
from mcp.engine.models.llama import LlamaForCausalLM
from mcp.engine.weights import ModelWeights
from mcp.modelfile.spec import ArchitectureConfig




class GeGLU(SwiGLU):
    """down(gelu_tanh(gate(x)) * up(x))."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).split(self.intermediate_size, dim=-1)
        return self.down_proj(F.gelu(gate, approximate="tanh") * up)


class Gemma3DecoderLayer(torch.nn.Module):
    def __init__(self, arch: ArchitectureConfig, weights: ModelWeights, prefix: str, local: bool) -> None:
        super().__init__()
        self.local = local

        def norm(name: str) -> RMSNorm:
            return RMSNorm(weights.tensor(f"{prefix}.{name}.weight"), arch.rms_norm_eps)

        self.input_layernorm, self.post_attention_layernorm = norm("input_layernorm"), norm("post_attention_layernorm")
        self.pre_feedforward_layernorm = norm("pre_feedforward_layernorm")
        self.post_feedforward_layernorm = norm("post_feedforward_layernorm")
        self.self_attn = QKNormAttention(arch, weights, f"{prefix}.self_attn")
        self.mlp = GeGLU(
            LinearGroup([weights.linear(f"{prefix}.mlp.{p}_proj") for p in ("gate", "up")]),
            weights.linear(f"{prefix}.mlp.down_proj"),
        )

    def forward(self, x, angles, cache, inputs):
        x = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), angles, cache, inputs))
        return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))


class Gemma3ForCausalLM(torch.nn.Module):
    def __init__(
        self, arch: ArchitectureConfig, weights: ModelWeights, max_positions: int, dtype: torch.dtype
    ) -> None:
        super().__init__()
        self.arch = arch
        self.dtype = dtype  # of activations and the KV cache
        self.embed_tokens = weights.embedding("model.embed_tokens.weight")
        self.embed_scale = torch.tensor(arch.hidden_size**0.5, dtype=torch.float32)
        self.layers = torch.nn.ModuleList(
            Gemma3DecoderLayer(arch, weights, f"model.layers.{i}", local)
            for i, local in enumerate(sliding_window_layers(arch))
        )
        self.norm = RMSNorm(weights.tensor("model.norm.weight"), arch.rms_norm_eps)
        self.lm_head = weights.linear("model.embed_tokens" if arch.tie_word_embeddings else "lm_head")
        device = self.embed_tokens.device
        self.rotary = RotaryEmbedding(inverse_frequencies(arch), max_positions, dtype).to(device)
        local = dataclasses.replace(arch, rope_theta=arch.rope_local_theta or arch.rope_theta, rope_scaling=None)
        self.local_rotary = RotaryEmbedding(inverse_frequencies(local), max_positions, dtype).to(device)

    new_cache = LlamaForCausalLM.new_cache  # a contiguous cache: every layer keeps every position

    def forward(
        self,
        input_ids: torch.Tensor,
        cache: KVCache | PagedKVStorage | HybridKVStorage,
        inputs: AttentionInputs | PagedAttentionInputs,
        local_inputs: PagedAttentionInputs | None = None,
    ) -> torch.Tensor:
        """New tokens [B, T] -> final hidden states [B, T, hidden]; as ``LlamaForCausalLM.forward``,
        the local layers seeing ``local_inputs`` (their own pool's layout, over a HybridKVStorage)
        or else ``inputs``, narrowed to the window (built once per forward)."""
        x = (self.embed_tokens(input_ids).to(torch.float32) * self.embed_scale).to(self.dtype)
        global_angles = self.rotary.angles(inputs.positions)  # [B, T, 1, D] each
        local_angles = self.local_rotary.angles(inputs.positions)
        local_inputs = windowed(inputs if local_inputs is None else local_inputs, self.arch.sliding_window)
        for layer, layer_cache in zip(self.layers, cache.layers):
            if layer.local:
                x = layer(x, local_angles, layer_cache, local_inputs)
            else:
                x = layer(x, global_angles, layer_cache, inputs)
        return self.norm(x)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Output head over hidden states [..., hidden] -> fp32 logits [..., vocab]."""
        return self.lm_head(hidden).to(torch.float32)
