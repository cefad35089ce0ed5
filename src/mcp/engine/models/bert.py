"""The BERT-family encoder (all-MiniLM, BGE, E5 and other BertModel checkpoints): embeddings only.

Word + absolute position + token-type embeddings, then post-norm layers: bidirectional
multi-head attention with biases, residual and LayerNorm; GELU (erf) feed-forward, residual
and LayerNorm. There is no KV cache and no output head: a batch of inputs, right-padded to
one length, runs whole, and ``attention_mask`` keeps every token from attending to padding.
Pooling the final hidden states into one vector an input is ``engine/pooling.py``'s.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mcp.engine.layers.linear import LinearGroup
from mcp.engine.weights import ModelWeights
from mcp.modelfile.spec import ArchitectureConfig


class LayerNorm(torch.nn.Module):
    """LayerNorm with a bias, in fp32 whatever the activations (as transformers computes it)."""

    def __init__(self, weights: ModelWeights, prefix: str, eps: float) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weights.tensor(f"{prefix}.weight"), requires_grad=False)
        self.bias = torch.nn.Parameter(weights.tensor(f"{prefix}.bias"), requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.layer_norm(x.to(torch.float32), self.weight.shape, self.weight, self.bias, self.eps)
        return out.to(x.dtype)


class EncoderLayer(torch.nn.Module):
    def __init__(self, arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> None:
        super().__init__()
        eps = arch.rms_norm_eps
        self.qkv = LinearGroup([weights.linear(f"{prefix}.attention.self.{p}") for p in ("query", "key", "value")])
        self.attention_out = weights.linear(f"{prefix}.attention.output.dense")
        self.attention_norm = LayerNorm(weights, f"{prefix}.attention.output.LayerNorm", eps)
        self.intermediate = weights.linear(f"{prefix}.intermediate.dense")
        self.output = weights.linear(f"{prefix}.output.dense")
        self.output_norm = LayerNorm(weights, f"{prefix}.output.LayerNorm", eps)
        self.num_heads, self.head_dim = arch.num_attention_heads, arch.head_dim

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        """x [B, T, hidden], key_mask [B, 1, 1, T] (True: a real token) -> [B, T, hidden]."""
        batch, length, _ = x.shape
        q, k, v = (t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # [B, H, T, D]
                   for t in self.qkv(x).chunk(3, dim=-1))
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
        attended = attended.transpose(1, 2).reshape(batch, length, self.num_heads * self.head_dim)
        x = self.attention_norm(x + self.attention_out(attended))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class BertModel(torch.nn.Module):
    """Token ids in, final hidden states out; built like every model from (arch, weights, max_positions, dtype)."""

    is_encoder = True

    def __init__(self, arch: ArchitectureConfig, weights: ModelWeights, max_positions: int,
                 dtype: torch.dtype) -> None:
        super().__init__()
        self.arch, self.dtype = arch, dtype
        self.word_embeddings = weights.embedding("embeddings.word_embeddings.weight")
        self.position_embeddings = weights.embedding("embeddings.position_embeddings.weight")
        self.token_type_embeddings = weights.embedding("embeddings.token_type_embeddings.weight")
        self.embeddings_norm = LayerNorm(weights, "embeddings.LayerNorm", arch.rms_norm_eps)
        self.layers = torch.nn.ModuleList(
            EncoderLayer(arch, weights, f"encoder.layer.{i}") for i in range(arch.num_layers))

    @property
    def device(self) -> torch.device:
        return self.word_embeddings.device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """input_ids [B, T] right-padded, attention_mask [B, T] (True: a real token) -> [B, T, hidden]."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = (self.word_embeddings(input_ids).float() + self.position_embeddings(positions).float()
             + self.token_type_embeddings(torch.zeros_like(input_ids)).float())  # one segment: type 0
        x = self.embeddings_norm(x).to(self.dtype)
        key_mask = attention_mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, key_mask)
        return x
