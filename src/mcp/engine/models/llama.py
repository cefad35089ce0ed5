"""The Llama-family decoder: Llama 2/3, SmolLM2, TinyLlama, Mistral (with its sliding window), Qwen2.

RMSNorm, rotary embeddings (with llama3/linear/frequency-factor scaling), grouped-query
attention with optional q/k/v bias, SwiGLU, tied or separate output head. A model with a
``sliding_window`` (and no layer pattern) has every layer see only the last ``sliding_window``
positions, as transformers' sliding-window causal mask does.
"""

from __future__ import annotations

import torch

from mcp.engine.kv.cache import KVCache
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.layers.attention import Attention, AttentionInputs, PagedAttentionInputs
from mcp.engine.layers.embedding import Embedding
from mcp.engine.layers.linear import LinearGroup
from mcp.engine.layers.mlp import SwiGLU
from mcp.engine.layers.norm import RMSNorm
from mcp.engine.layers.rotary import RotaryEmbedding, inverse_frequencies
from mcp.engine.layers.window import windowed
from mcp.engine.weights import ModelWeights
from mcp.modelfile.spec import ArchitectureConfig


class DecoderLayer(torch.nn.Module):
    def __init__(self, arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> None:
        super().__init__()
        eps = arch.rms_norm_eps
        self.input_layernorm = RMSNorm(weights.tensor(f"{prefix}.input_layernorm.weight"), eps)
        self.self_attn = Attention(
            self.qkv_proj(arch, weights, f"{prefix}.self_attn"),
            weights.linear(f"{prefix}.self_attn.o_proj"),
            num_heads=arch.num_attention_heads,
            num_kv_heads=arch.num_kv_heads,
            head_dim=arch.head_dim,
        )
        self.post_attention_layernorm = RMSNorm(
            weights.tensor(f"{prefix}.post_attention_layernorm.weight"), eps
        )
        self.mlp = SwiGLU(self.gate_up_proj(arch, weights, f"{prefix}.mlp"), weights.linear(f"{prefix}.mlp.down_proj"))

    @staticmethod
    def qkv_proj(arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> LinearGroup:
        """q, k and v, stored apart (fused at load where their kinds allow)."""
        return LinearGroup([weights.linear(f"{prefix}.{p}_proj") for p in ("q", "k", "v")])

    @staticmethod
    def gate_up_proj(arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> LinearGroup:
        return LinearGroup([weights.linear(f"{prefix}.{p}_proj") for p in ("gate", "up")])

    def forward(self, x, angles, cache, inputs):
        x = x + self.self_attn(self.input_layernorm(x), angles, cache, inputs)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaForCausalLM(torch.nn.Module):
    layer_class = DecoderLayer

    def __init__(
        self, arch: ArchitectureConfig, weights: ModelWeights, max_positions: int, dtype: torch.dtype
    ) -> None:
        super().__init__()
        self.arch = arch
        self.dtype = dtype  # of activations and the KV cache
        self.embed_tokens: Embedding = weights.embedding("model.embed_tokens.weight")
        self.layers = torch.nn.ModuleList(
            self.layer_class(arch, weights, f"model.layers.{i}") for i in range(arch.num_layers)
        )
        self.norm = RMSNorm(weights.tensor("model.norm.weight"), arch.rms_norm_eps)
        self.lm_head = weights.linear("model.embed_tokens" if arch.tie_word_embeddings else "lm_head")
        self.rotary = self.rotary_embedding(arch, weights, max_positions, dtype).to(self.embed_tokens.device)

    @staticmethod
    def rotary_embedding(arch: ArchitectureConfig, weights: ModelWeights, max_positions: int,
                         dtype: torch.dtype) -> RotaryEmbedding:
        return RotaryEmbedding(inverse_frequencies(arch, weights.get("model.rope_freqs")), max_positions, dtype)

    def new_cache(self, batch_size: int, max_len: int) -> KVCache:
        """A zeroed KV cache for ``batch_size`` sequences of up to ``max_len`` tokens each."""
        arch = self.arch
        return KVCache.allocate(arch.num_layers, batch_size, arch.num_kv_heads, max_len, arch.head_dim,
                                self.dtype, self.embed_tokens.device)

    def forward(
        self,
        input_ids: torch.Tensor,
        cache: KVCache | PagedKVStorage,
        inputs: AttentionInputs | PagedAttentionInputs,
    ) -> torch.Tensor:
        """Run new tokens [B, T] through the decoder; returns final hidden states [B, T, hidden].

        Row b is the cache's live row b; ``inputs`` (built once per forward by
        ``attention_inputs``) gives the new tokens' positions, which are their cache slots.
        Over a paged cache the row is one step's tokens of every sequence [1, N] and
        ``inputs`` comes from ``paged_attention_inputs``.
        """
        x = self.embed_tokens(input_ids).to(self.dtype)
        angles = self.rotary.angles(inputs.positions)  # [B, T, 1, D] each, shared by every layer
        if self.arch.sliding_window:  # every layer's keys limited to the window (built once per forward)
            inputs = windowed(inputs, self.arch.sliding_window)
        for layer, layer_cache in zip(self.layers, cache.layers):
            x = layer(x, angles, layer_cache, inputs)
        return self.norm(x)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Token ids -> embeddings as the first layer takes them."""
        return self.embed_tokens(input_ids)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Output head over hidden states [..., hidden] -> fp32 logits [..., vocab]."""
        return self.lm_head(hidden).to(torch.float32)
