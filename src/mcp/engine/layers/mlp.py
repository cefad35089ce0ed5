"""The SwiGLU feed-forward block: down(silu(gate(x)) * up(x))."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mcp.engine.layers.linear import LinearGroup


class SwiGLU(torch.nn.Module):
    def __init__(self, gate_up_proj: LinearGroup, down_proj: torch.nn.Module) -> None:
        super().__init__()
        gate_size, up_size = gate_up_proj.sizes
        if gate_size != up_size:
            raise ValueError(f"gate and up projections differ in size: {gate_size} and {up_size}")
        self.gate_up_proj = gate_up_proj  # [..., 2 * intermediate]: gate then up
        self.down_proj = down_proj
        self.intermediate_size = gate_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).split(self.intermediate_size, dim=-1)
        return self.down_proj(F.silu(gate) * up)
