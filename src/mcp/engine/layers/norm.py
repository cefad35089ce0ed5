"""RMSNorm, computed in fp32 whatever the activation dtype (as Hugging Face does)."""

from __future__ import annotations

import torch


class RMSNorm(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:  # the same arithmetic without the no-op casts (a step runs 61)
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))
        input_dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * x.to(input_dtype)).to(input_dtype)  # weights are fp32; keep x's dtype
