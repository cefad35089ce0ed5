"""The packed int4 weight format: GGUF 4-bit blocks re-laid for PyTorch's int4pack kernels.

A weight [N, K] becomes 4-bit codes q in [0, 15] with, per group of 32 along K, a ``scale``
and an ``offset``: ``w = scale * q + offset`` (fp32). Q4_0, Q4_1 and Q4_K map onto this
exactly (the same fp32 operations ggml's reference dequantizer performs), so the format
reproduces the GGUF's own dequantized weights: bit for bit for Q4_1 and Q4_K, and equal
values for Q4_0 (where ``d * 0`` may be ``-0.0`` in ggml and ``+0.0`` here). The kernels take
``scale_and_zero`` [K/32, N, 2] with their own formula ``w = (q - 8) * scale + zero``, so
``zero = offset + 8 * scale``.

Codes are stored pre-packed in the byte order the runtime's kernel reads: "rows" for the
native kernels (``mcp.engine.kernels``: each row K/32 groups of 16 bytes, byte j holding
element j in its low nibble and j + 16 in its high one, GGUF's Q4_0/Q4_1 order), or the
order of ``torch._convert_weight_to_int4pack_for_cpu``, which depends on the CPU capability
torch dispatches to ("avx512", "avx2", "default"). Every order is pure index shuffling,
reproduced here so that the compiler can pack offline and a loader with another kernel or on
another CPU can repack without the source file.
"""

from __future__ import annotations

import torch

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.engine import kernels

GROUP_SIZE = 32
ROW_ALIGN = 64  # rows per block in the widest layout; other row counts are not packed
LAYOUTS = ("rows", "avx512", "avx2", "default")
TORCH_LAYOUTS = LAYOUTS[1:]
INT4_SOURCES = ("q4_0", "q4_1", "q4_k")
# The dtype that holds each source's scale/offset exactly: Q4_0 (d, -8d) and Q4_1 (d, m) are
# fp16 in the GGUF; Q4_K's d * sc_j is not, so it keeps fp32.
QPARAMS_DTYPES = {"q4_0": torch.float16, "q4_1": torch.float16, "q4_k": torch.float32}


def runtime_layout() -> str:
    """The byte order this process's int4 kernel reads: the native kernels' when they are
    built, else torch's int4pack kernel's for this CPU."""
    return "rows" if kernels.available() else torch_layout()


def torch_layout() -> str:
    """The byte order torch's CPU int4pack kernel expects in this process."""
    capability = torch.backends.cpu.get_cpu_capability().lower()
    return capability if capability in LAYOUTS else "default"


def can_pack(shape: tuple[int, ...]) -> bool:
    return len(shape) == 2 and shape[0] % ROW_ALIGN == 0 and shape[1] % GROUP_SIZE == 0


def pack(codes: torch.Tensor, layout: str) -> torch.Tensor:
    """Codes uint8 [N, K] (values 0..15) -> packed uint8 [N, K/2] in ``layout``'s byte order."""
    n, k = codes.shape
    codes = codes.to(torch.uint8)
    if layout == "rows":  # per group of 32: byte j holds elements j and j + 16
        c = codes.reshape(n, k // GROUP_SIZE, 2, GROUP_SIZE // 2)
        return (c[:, :, 0] | (c[:, :, 1] << 4)).reshape(n, k // 2)
    if layout == "avx512":  # blocks of 64 rows; byte (k, j) holds rows j and j + 32
        c = codes.reshape(n // 64, 2, 32, k)
        packed = (c[:, 0] | (c[:, 1] << 4)).transpose(1, 2)  # [N/64, K, 32]
    elif layout == "avx2":  # blocks of 32 rows; byte (k, j) holds rows j and j + 16
        c = codes.reshape(n // 32, 2, 16, k)
        packed = (c[:, 0] | (c[:, 1] << 4)).transpose(1, 2)  # [N/32, K, 16]
    elif layout == "default":  # blocks of 32 rows; byte (k, j) holds rows 2j and 2j + 1
        c = codes.reshape(n // 32, 16, 2, k)
        packed = (c[:, :, 0] | (c[:, :, 1] << 4)).transpose(1, 2)  # [N/32, K, 16]
    else:
        raise UnsupportedModelError(f"unknown int4 layout {layout!r}; known: {', '.join(LAYOUTS)}")
    return packed.contiguous().reshape(n, k // 2)


def unpack(packed: torch.Tensor, layout: str) -> torch.Tensor:
    """The inverse of ``pack``: packed uint8 [N, K/2] -> codes uint8 [N, K]."""
    n, half_k = packed.shape
    k = half_k * 2
    low, high = packed & 0x0F, packed >> 4
    if layout == "rows":
        groups = (t.reshape(n, k // GROUP_SIZE, GROUP_SIZE // 2) for t in (low, high))
        return torch.cat(tuple(groups), dim=-1).reshape(n, k)
    if layout == "avx512":
        low, high = (t.reshape(n // 64, k, 32).transpose(1, 2) for t in (low, high))  # [N/64, 32, K]
        return torch.stack((low, high), dim=1).reshape(n, k)
    if layout == "avx2":
        low, high = (t.reshape(n // 32, k, 16).transpose(1, 2) for t in (low, high))
        return torch.stack((low, high), dim=1).reshape(n, k)
    if layout == "default":
        low, high = (t.reshape(n // 32, k, 16).transpose(1, 2) for t in (low, high))  # [N/32, 16, K]
        return torch.stack((low, high), dim=2).reshape(n, k)
    raise UnsupportedModelError(f"unknown int4 layout {layout!r}; known: {', '.join(LAYOUTS)}")


def repack(packed: torch.Tensor, stored: str, wanted: str) -> torch.Tensor:
    return packed if stored == wanted else pack(unpack(packed, stored), wanted)


def codes_from_blocks(blocks: torch.Tensor, encoding: str, shape: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """GGUF 4-bit blocks [N, row_bytes] -> (codes uint8 [N, K], scale/offset f32 [N, K/32, 2])."""
    if encoding not in INT4_SOURCES:
        raise UnsupportedModelError(f"{encoding} has no exact int4 mapping; int4 comes from {INT4_SOURCES}")
    n, k = shape
    blocks = blocks.reshape(n, -1)
    if encoding == "q4_k":
        return _codes_q4_k(blocks.reshape(n, k // 256, 144), n, k)
    block_bytes = 18 if encoding == "q4_0" else 20
    b = blocks.reshape(n, k // 32, block_bytes)
    d = _fp16(b[..., 0:2])  # [N, K/32]
    quants = b[..., block_bytes - 16:]  # [N, K/32, 16]: element j low nibble, j + 16 high
    codes = torch.cat((quants & 0x0F, quants >> 4), dim=-1).reshape(n, k)
    offset = -8 * d if encoding == "q4_0" else _fp16(b[..., 2:4])
    return codes, torch.stack((d, offset), dim=-1)


def _codes_q4_k(b: torch.Tensor, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    # b: [N, K/256, 144] = fp16 d, fp16 dmin, 12 B packed 6-bit scales/mins, 128 B nibbles
    d, dmin = _fp16(b[..., 0:2]), _fp16(b[..., 2:4])  # [N, S]
    sc, mn = _k_scales(b[..., 4:16].to(torch.int32))  # [N, S, 8] each
    q = b[..., 16:].reshape(n, k // 256, 4, 32)  # 4 chunks of 32 bytes -> 64 weights each
    codes = torch.stack((q & 0x0F, q >> 4), dim=3).reshape(n, k)  # chunk c: sub-blocks 2c, 2c+1
    scale = d[..., None] * sc.to(torch.float32)  # [N, S, 8]
    offset = -(dmin[..., None] * mn.to(torch.float32))
    return codes, torch.stack((scale, offset), dim=-1).reshape(n, k // 32, 2)


def _k_scales(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ggml's get_scale_min_k4 for all 8 sub-blocks: s [..., 12] -> (scales, mins) [..., 8]."""
    low_sc = s[..., 0:4] & 63
    low_mn = s[..., 4:8] & 63
    high_sc = (s[..., 8:12] & 0x0F) | ((s[..., 0:4] >> 6) << 4)
    high_mn = (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)
    return torch.cat((low_sc, high_sc), dim=-1), torch.cat((low_mn, high_mn), dim=-1)


def _fp16(two_bytes: torch.Tensor) -> torch.Tensor:
    """Little-endian fp16 stored as [..., 2] uint8 -> fp32 [...]."""
    return two_bytes.contiguous().view(torch.float16).squeeze(-1).to(torch.float32)


def stored_qparams(scale_offset: torch.Tensor, encoding: str) -> torch.Tensor:
    """(scale, offset) in the dtype that holds ``encoding``'s exactly (``QPARAMS_DTYPES``)."""
    stored = scale_offset.to(QPARAMS_DTYPES[encoding])
    if not torch.equal(stored.to(torch.float32), scale_offset):
        raise ModelFormatError(f"{encoding} scales do not fit {stored.dtype} exactly; the blocks are malformed")
    return stored


def dequantize_int4(codes: torch.Tensor, scale_offset: torch.Tensor) -> torch.Tensor:
    """Reference values: codes uint8 [N, K], scale/offset [N, K/32, 2] -> fp32 [N, K]."""
    n, k = codes.shape
    q = codes.reshape(n, k // GROUP_SIZE, GROUP_SIZE).to(torch.float32)
    scale_offset = scale_offset.to(torch.float32)
    values = scale_offset[..., 0:1] * q + scale_offset[..., 1:2]
    return values.reshape(n, k)


def kernel_scale_and_zero(scale_offset: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[N, K/32, 2] (scale, offset) -> the kernel's [K/32, N, 2] (scale, offset + 8 * scale)."""
    scale_offset = scale_offset.to(torch.float32)
    scale, offset = scale_offset[..., 0], scale_offset[..., 1]
    zero = offset + 8 * scale
    return torch.stack((scale, zero), dim=-1).transpose(0, 1).contiguous().to(dtype)


def dequantize_kernel_form(packed: torch.Tensor, layout: str, scale_zero: torch.Tensor) -> torch.Tensor:
    """What the kernel computes with: (q - 8) * scale + zero, fp32 [N, K] (scales as stored)."""
    codes = unpack(packed, layout)
    n, k = codes.shape
    q = codes.reshape(n, k // GROUP_SIZE, GROUP_SIZE).to(torch.float32) - 8
    scale_zero = scale_zero.to(torch.float32).transpose(0, 1)  # [N, K/32, 2]
    return (q * scale_zero[..., 0:1] + scale_zero[..., 1:2]).reshape(n, k)


def check_packed(name: str, packed: torch.Tensor, scale_zero: torch.Tensor, shape: tuple[int, int]) -> None:
    n, k = shape
    if tuple(packed.shape) != (n, k // 2) or tuple(scale_zero.shape) != (k // GROUP_SIZE, n, 2):
        raise ModelFormatError(
            f"int4 tensor {name}: packed {list(packed.shape)} / scale_zero {list(scale_zero.shape)} "
            f"do not fit its shape {list(shape)}"
        )
