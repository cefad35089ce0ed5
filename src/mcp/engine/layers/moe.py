"""A sparse mixture-of-experts MLP: a router picks ``top_k`` SwiGLU experts per token.

As transformers' Qwen3MoeSparseMoeBlock computes it: router logits (one per expert), softmax in
fp32, the ``top_k`` largest probabilities, divided by their sum when ``normalize``; each token's
output is the sum of its chosen experts' outputs times those weights.

Batched by expert, so that a step reads each active expert's weights once: the step's
(token, expert) pairs are sorted by expert, each expert with any pair runs once over all of its
tokens (one matrix call per projection, whatever the batch), and its weighted outputs are added
into the tokens' rows. Every expert is a ``SwiGLU`` over the loader's linear layers, so a packed
expert runs the native kernels for few rows (decode) and the tiled GEMM for many (prefill).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mcp.engine.layers.mlp import SwiGLU


class SparseMoE(torch.nn.Module):
    def __init__(self, router: torch.nn.Module, experts: Sequence[SwiGLU], top_k: int, normalize: bool) -> None:
        super().__init__()
        if router.out_features != len(experts):
            raise ValueError(f"the router scores {router.out_features} experts, the layer has {len(experts)}")
        self.router = router  # hidden -> one logit per expert
        self.experts = torch.nn.ModuleList(experts)
        self.top_k = top_k
        self.normalize = normalize

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens x [N, hidden] -> (weights [N, k] in x's dtype, chosen experts [N, k])."""
        probs = torch.softmax(self.router(x).to(torch.float32), dim=-1)  # [N, E]
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        if self.normalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.to(x.dtype), chosen

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])  # [N, hidden]
        weights, chosen = self.route(flat)
        pairs = chosen.flatten().argsort(stable=True)  # [N k] pair p = token p // k's choice p % k, by expert
        counts = torch.bincount(chosen.flatten(), minlength=len(self.experts)).tolist()
        out = torch.zeros_like(flat)
        start = 0
        for expert, count in zip(self.experts, counts):
            if count:
                mine = pairs[start:start + count]
                tokens = mine // self.top_k  # ascending: a stable sort keeps the token order
                out.index_add_(0, tokens, expert(flat[tokens]) * weights.flatten()[mine, None])
                start += count
        return out.view_as(x)
