"""Weight-only int8: per output row for PyTorch's kernel, or per group of 32 (GGUF's Q8_0).

Grouped int8 (``codes_from_q8_0``) is GGUF's Q8_0 block split into int8 codes [N, K] and
its fp16 scales [N, K/32], exactly (w = d * q); the native kernels (``mcp.engine.kernels``) read
it as it is stored.

Per-row int8 is for PyTorch's ``_weight_int8pack_mm``.

A weight [N, K] becomes int8 codes q in [-127, 127] and fp32 scales s [N] with
``w ~ s[n] * q[n, k]``, ``s[n] = max_k |w[n, k]| / 127`` (symmetric, round to nearest). Unlike
int4, no GGUF block maps onto it exactly (their scales are per block of 32, the kernel's per
row), so int8 is a requantization of the source's dequantized values; its error against the
fp32 reference is measured by ``benchmarks/precision_quality.py``.

The kernel misbehaves on some shapes (wrong sums when K is not a multiple of 16, a crash at
N = 7 in torch 2.13), so only matrices with whole 16-row and 32-column tiles are quantized.
"""

from __future__ import annotations

import torch

ROW_ALIGN = 16
COLUMN_ALIGN = 32
GROUP_SIZE = 32
Q8_0_BLOCK_BYTES = 34  # fp16 d, then 32 int8 codes


def codes_from_q8_0(blocks: torch.Tensor, shape: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """GGUF Q8_0 blocks [N, row_bytes] -> (int8 codes [N, K], fp16 scales [N, K/32]), exactly."""
    n, k = shape
    b = blocks.reshape(n, k // GROUP_SIZE, Q8_0_BLOCK_BYTES)
    scales = b[..., 0:2].contiguous().view(torch.float16).squeeze(-1)
    codes = b[..., 2:].contiguous().view(torch.int8).reshape(n, k)
    return codes, scales


def dequantize_grouped(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Reference values of grouped int8: codes [N, K], scales [N, K/32] -> fp32 [N, K]."""
    n, k = codes.shape
    values = codes.to(torch.float32).reshape(n, k // GROUP_SIZE, GROUP_SIZE) * scales.to(torch.float32)[..., None]
    return values.reshape(n, k)


def can_quantize(shape: tuple[int, ...]) -> bool:
    return len(shape) == 2 and shape[0] % ROW_ALIGN == 0 and shape[1] % COLUMN_ALIGN == 0


def quantize(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense [N, K] -> (int8 codes [N, K], fp32 scales [N]); an all-zero row gets scale 1."""
    values = weight.to(torch.float32)
    scales = values.abs().amax(dim=1) / 127
    scales = torch.where(scales > 0, scales, torch.ones_like(scales))
    codes = torch.round(values / scales[:, None]).clamp_(-127, 127).to(torch.int8)
    return codes, scales


def dequantize(codes: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """What the kernel multiplies by: s[n] * q[n, k], as ``dtype`` [N, K]."""
    return (codes.to(torch.float32) * scales.to(torch.float32)[:, None]).to(dtype)
