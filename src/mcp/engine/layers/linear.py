"""Linear layers over weights already in their runtime form.

Each layer owns its weights; the loader hands it tensors in the form the precision plan
chose. ``Linear`` is a dense GEMM; ``Int4Linear`` runs PyTorch's packed int4 kernel for
few rows (decode) and a dense GEMM on the dequantized weight for many rows (prefill).
Outputs come back in the activations' dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mcp.engine.quant import int4pack


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)  # [out, in]
        self.bias = None if bias is None else torch.nn.Parameter(bias.to(weight.dtype), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _dense(x.to(self.weight.dtype), self.weight, self.bias)
        return out.to(x.dtype)


class Int4Linear(torch.nn.Module):
    """Weight-only int4 (group 32) for decode; dense ``prefill_dtype`` GEMM for many rows."""

    def __init__(
        self,
        packed: torch.Tensor,  # uint8 [N, K/2] in ``layout``'s byte order
        scale_zero: torch.Tensor,  # bf16 [K/32, N, 2]: w = (q - 8) * scale + zero
        layout: str,
        bias: torch.Tensor | None,
        prefill_dtype: torch.dtype,
        cache_dense: bool,
        decode_max_rows: int,
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = packed.shape[0], packed.shape[1] * 2
        self.register_buffer("packed", packed, persistent=False)
        self.register_buffer("scale_and_zero", scale_zero, persistent=False)
        self._layout = layout
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)
        self.prefill_dtype = prefill_dtype
        self.decode_max_rows = decode_max_rows
        self._dense = self.dense_weight() if cache_dense else None

    def dense_weight(self) -> torch.Tensor:
        """The weight [N, K] in ``prefill_dtype``, as the decode kernel sees it."""
        values = int4pack.dequantize_kernel_form(self.packed, self._layout, self.scale_and_zero)
        return values.to(self.prefill_dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // self.in_features
        if rows > self.decode_max_rows:
            weight = self._dense if self._dense is not None else self.dense_weight()
            out = _dense(x.to(self.prefill_dtype), weight, None)
        else:
            flat = x.reshape(rows, self.in_features).to(torch.bfloat16)
            out = torch._weight_int4pack_mm_for_cpu(flat, self.packed, int4pack.GROUP_SIZE, self.scale_and_zero)
            out = out.view(*x.shape[:-1], self.out_features)
        out = out.to(x.dtype)
        return out if self.bias is None else out + self.bias.to(x.dtype)


def _dense(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x [..., K] @ weight.T; one bf16/f16 row goes to ``mv`` (F.linear is ~4x slower there)."""
    if x.dtype != torch.float32 and x.numel() == x.shape[-1]:
        out = torch.mv(weight, x.reshape(-1)).view(*x.shape[:-1], weight.shape[0])
        return out if bias is None else out + bias
    return F.linear(x, weight, bias)
