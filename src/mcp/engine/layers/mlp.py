"""The SwiGLU feed-forward block: down(silu(gate(x)) * up(x))."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mcp.engine.layers.linear import Linear


class SwiGLU(torch.nn.Module):
    def __init__(self, gate_proj: Linear, up_proj: Linear, down_proj: Linear) -> None:
        super().__init__()
        self.gate_proj = gate_proj
        self.up_proj = up_proj
        self.down_proj = down_proj

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
