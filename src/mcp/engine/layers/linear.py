"""A linear layer over weights already in their runtime form.

Each layer owns its weights; the loader hands it tensors in the precision the plan chose.
Faster kernels (packed int4/int8) replace this module per tensor, not per model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)  # [out, in]
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)

    @property
    def out_features(self) -> int:
        return self.weight.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != self.weight.dtype:
            x = x.to(self.weight.dtype)
        return F.linear(x, self.weight, self.bias)
