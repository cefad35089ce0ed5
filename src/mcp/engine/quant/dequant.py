"""GGUF block dequantizers in torch.

Blocks arrive exactly as GGUF stores them: uint8 ``[rows, row_bytes]`` (``spec.stored_shape``),
possibly backed by a read-only memory map, so nothing here writes into the input. Each
decoder works on whole tensors of blocks ``[rows, blocks, bytes]`` with views and bit ops, in
the same floating-point order as ggml's reference (``gguf.quants``), so results match it
bit for bit in fp32. Rows are processed in chunks to bound the temporary memory.

Block layouts (ggml ``ggml-common.h``; "nibbles" pack element j low and j+16 high per byte
within each 32-weight group):
  q4_0  fp16 d | 16 B nibbles                                  d * (q - 8)
  q4_1  fp16 d | fp16 m | 16 B nibbles                         d * q + m
  q5_0  fp16 d | u32 qh (bit i: element i's fifth bit) | 16 B nibbles   d * (q - 16)
  q5_1  fp16 d | fp16 m | u32 qh | 16 B nibbles                  d * q + m
  q8_0  fp16 d | 32 x int8                                     d * q
  q4_k  fp16 d | fp16 dmin | 12 B 6-bit scales+mins | 128 B nibbles        (d*sc) * q - dmin*m
  q5_k  fp16 d | fp16 dmin | 12 B scales+mins | 32 B high bits | 128 B nibbles
  q6_k  128 B low 4 bits | 64 B high 2 bits | 16 x int8 scales | fp16 d    (d*s) * (q - 32)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import torch

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.modelfile.spec import BLOCK_ENCODINGS, DENSE_ENCODINGS, stored_shape

# Weights decoded per chunk: bounds temporaries at a few tens of MB whatever the tensor size.
CHUNK_WEIGHTS = 1 << 21

_DENSE_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_NIBBLE_SHIFTS = (0, 4)


def dequantize(
    blocks: torch.Tensor | np.ndarray,
    encoding: str,
    shape: tuple[int, ...],
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Decode stored ``blocks`` of ``encoding`` into a new tensor of logical ``shape``.

    Quantized encodings are decoded in fp32 and then cast to ``dtype``. Dense encodings
    (``f32``/``f16``/``bf16``) accept the tensor in its own dtype or as raw uint8 bytes and
    are cast. The result is always a fresh tensor on ``blocks``' device, safe to write even
    when ``blocks`` is a read-only memory map.
    """
    shape = tuple(int(d) for d in shape)
    blocks = _as_tensor(blocks)
    if encoding in DENSE_ENCODINGS:
        return _dense(blocks, encoding, shape, dtype)
    decode = _DECODERS.get(encoding)
    if decode is None:
        raise UnsupportedModelError(
            f"tensor encoding {encoding!r} is not supported; supported: "
            f"{', '.join(DENSE_ENCODINGS + tuple(_DECODERS))}. Recompile the model with one of them."
        )
    _check_blocks(blocks, encoding, shape)
    return _decode_rows(blocks, encoding, decode, dtype).reshape(shape)


def _as_tensor(blocks: torch.Tensor | np.ndarray) -> torch.Tensor:
    if isinstance(blocks, torch.Tensor):
        return blocks
    with warnings.catch_warnings():
        # A read-only memory map: torch cannot mark tensors read-only, and we never write.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(np.asarray(blocks))


def _check_blocks(blocks: torch.Tensor, encoding: str, shape: tuple[int, ...]) -> None:
    try:
        expected = stored_shape(encoding, shape)
    except ValueError as exc:
        raise ModelFormatError(f"cannot decode {encoding} tensor of shape {shape}: {exc}") from None
    if blocks.dtype != torch.uint8 or tuple(blocks.shape) != expected:
        raise ModelFormatError(
            f"{encoding} tensor of shape {shape} must be stored as uint8 {expected}, got "
            f"{str(blocks.dtype).removeprefix('torch.')} {tuple(blocks.shape)}; the file is corrupt "
            "or was written by an incompatible compiler"
        )


def _dense(
    blocks: torch.Tensor, encoding: str, shape: tuple[int, ...], dtype: torch.dtype
) -> torch.Tensor:
    stored = _DENSE_DTYPES[encoding]
    if blocks.dtype == torch.uint8:
        blocks = blocks.contiguous().view(-1).view(stored)
    if blocks.dtype != stored or blocks.numel() != math.prod(shape):
        raise ModelFormatError(
            f"{encoding} tensor of shape {shape} cannot be read from "
            f"{str(blocks.dtype).removeprefix('torch.')} data of {blocks.numel()} elements"
        )
    return blocks.reshape(shape).to(dtype, copy=True)


def _decode_rows(
    blocks: torch.Tensor, encoding: str, decode: Callable[[torch.Tensor], torch.Tensor], dtype: torch.dtype
) -> torch.Tensor:
    block_weights, block_bytes = BLOCK_ENCODINGS[encoding]
    rows, row_bytes = blocks.shape
    num_blocks = row_bytes // block_bytes
    out = torch.empty(rows, num_blocks * block_weights, dtype=dtype, device=blocks.device)
    chunk = max(1, CHUNK_WEIGHTS // max(1, num_blocks * block_weights))
    for start in range(0, rows, chunk):
        part = blocks[start : start + chunk].reshape(-1, num_blocks, block_bytes)  # [r, blocks, bytes]
        out[start : start + chunk] = decode(part).reshape(part.shape[0], -1)  # fp32 [r, blocks*weights]
    return out


def _fp16(raw: torch.Tensor) -> torch.Tensor:
    """Little-endian fp16 fields ``[..., 2k]`` bytes -> fp32 ``[..., k]``."""
    return raw.contiguous().view(torch.float16).float()


def _unpack_bits(packed: torch.Tensor, shifts: tuple[int, ...], mask: int) -> torch.Tensor:
    """``[..., g, n]`` bytes -> ``[..., g * len(shifts), n]``: each byte's fields, in shift order."""
    shift = torch.tensor(shifts, dtype=torch.uint8, device=packed.device).view(len(shifts), 1)
    fields = (packed.unsqueeze(-2) >> shift) & mask  # [..., g, len(shifts), n]
    return fields.flatten(-3, -2)


def _q4_0(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 18]
    d = _fp16(b[..., :2])  # [r, n, 1]
    q = _unpack_bits(b[..., 2:].unsqueeze(-2), _NIBBLE_SHIFTS, 0x0F)  # [r, n, 2, 16]
    q = (q.to(torch.int8) - 8).float().flatten(-2)  # [r, n, 32]
    return d * q


def _q4_1(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 20]
    d, m = _fp16(b[..., :2]), _fp16(b[..., 2:4])  # [r, n, 1]
    q = _unpack_bits(b[..., 4:].unsqueeze(-2), _NIBBLE_SHIFTS, 0x0F).float().flatten(-2)  # [r, n, 32]
    return d * q + m


def _q5_codes(qh: torch.Tensor, qs: torch.Tensor) -> torch.Tensor:
    """4 bytes of fifth bits ``[r, n, 4]`` and 16 of nibbles -> codes 0..31 uint8 ``[r, n, 32]``."""
    high = _unpack_bits(qh.unsqueeze(-2), tuple(range(8)), 0x01)  # [r, n, 8, 4]: bit s of byte b
    high = high.transpose(-1, -2).flatten(-2)  # element 8 * b + s
    low = _unpack_bits(qs.unsqueeze(-2), _NIBBLE_SHIFTS, 0x0F).flatten(-2)  # [r, n, 32]
    return low | (high << 4)


def _q5_0(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 22]
    d = _fp16(b[..., :2])  # [r, n, 1]
    q = (_q5_codes(b[..., 2:6], b[..., 6:]).to(torch.int8) - 16).float()
    return d * q


def _q5_1(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 24]
    d, m = _fp16(b[..., :2]), _fp16(b[..., 2:4])  # [r, n, 1]
    return d * _q5_codes(b[..., 4:8], b[..., 8:]).float() + m


def _q8_0(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 34]
    d = _fp16(b[..., :2])  # [r, n, 1]
    q = b[..., 2:].contiguous().view(torch.int8).float()  # [r, n, 32]
    return q * d


def _k_scales_mins(packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """12 packed bytes ``[r, n, 12]`` -> 6-bit scales and mins, fp32 ``[r, n, 8, 1]`` each.

    Bytes 0-3 hold scales 0-3 (low 6 bits), 4-7 mins 0-3; byte 8+j holds the low 4 bits of
    scale 4+j (low nibble) and min 4+j (high nibble), whose top 2 bits are the spare high
    bits of bytes j and 4+j.
    """
    low, high, mixed = packed[..., 0:4], packed[..., 4:8], packed[..., 8:12]  # [r, n, 4]
    scales = torch.cat([low & 0x3F, (mixed & 0x0F) | ((low >> 2) & 0x30)], dim=-1)
    mins = torch.cat([high & 0x3F, (mixed >> 4) | ((high >> 2) & 0x30)], dim=-1)
    return scales.float().unsqueeze(-1), mins.float().unsqueeze(-1)


def _k_affine(b: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """(d*sc) * q - dmin*m for Q4_K/Q5_K; ``q`` is uint8 ``[r, n, 8, 32]``."""
    d, dmin = _fp16(b[..., 0:2]).unsqueeze(-1), _fp16(b[..., 2:4]).unsqueeze(-1)  # [r, n, 1, 1]
    scales, mins = _k_scales_mins(b[..., 4:16])  # [r, n, 8, 1]
    return (d * scales) * q.float() - dmin * mins  # [r, n, 8, 32]


def _q4_k(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 144]
    qs = b[..., 16:144].unflatten(-1, (4, 32))  # [r, n, 4, 32]
    return _k_affine(b, _unpack_bits(qs, _NIBBLE_SHIFTS, 0x0F))  # q: [r, n, 8, 32]


def _q5_k(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 176]
    qh = b[..., 16:48].unsqueeze(-2)  # [r, n, 1, 32]: bit j of byte l is element l of group j
    ql = b[..., 48:176].unflatten(-1, (4, 32))  # [r, n, 4, 32]
    high = _unpack_bits(qh, tuple(range(8)), 0x01)  # [r, n, 8, 32]
    return _k_affine(b, _unpack_bits(ql, _NIBBLE_SHIFTS, 0x0F) | (high << 4))


def _q6_k(b: torch.Tensor) -> torch.Tensor:  # b: [r, n, 210]
    # Both bit planes unpack to the same element order: half (128 weights), shift, byte.
    ql = _unpack_bits(b[..., 0:128].unflatten(-1, (2, 64)), _NIBBLE_SHIFTS, 0x0F)  # [r, n, 4, 64]
    qh = _unpack_bits(b[..., 128:192].unflatten(-1, (2, 32)), (0, 2, 4, 6), 0x03)  # [r, n, 8, 32]
    q = ql.flatten(-2) | (qh.flatten(-2) << 4)  # [r, n, 256], 0..63
    q = (q.to(torch.int8) - 32).float().unflatten(-1, (16, 16))  # [r, n, 16, 16]
    scales = b[..., 192:208].contiguous().view(torch.int8).float()  # [r, n, 16]
    d = _fp16(b[..., 208:210])  # [r, n, 1]
    return ((d * scales).unsqueeze(-1) * q).flatten(-2)  # [r, n, 256]


_DECODERS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "q4_0": _q4_0,
    "q4_1": _q4_1,
    "q5_0": _q5_0,
    "q5_1": _q5_1,
    "q8_0": _q8_0,
    "q4_k": _q4_k,
    "q5_k": _q5_k,
    "q6_k": _q6_k,
}
