"""RoPE tables filled as positions are reached: the values of tables built whole, and a short
request's rows the only ones resident (Gemma 3 270M's shape: 32k positions, head dim 256)."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap

import pytest
import torch

from mcp.engine.layers.rotary import ROWS_PER_FILL, RotaryEmbedding

POSITIONS, HEAD_DIM = 32768, 256


def _inverse_frequencies(theta: float) -> torch.Tensor:
    return 1.0 / theta ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.int64).to(torch.float32) / HEAD_DIM)


def _whole_tables(inv_freq: torch.Tensor, num_positions: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The tables as they were built before: every position at once."""
    freqs = torch.outer(torch.arange(num_positions, dtype=torch.float32), inv_freq)
    cos, sin = freqs.cos(), freqs.sin()
    return torch.cat((cos, cos), dim=-1), torch.cat((-sin, sin), dim=-1)


def _resident_bytes(tensor: torch.Tensor) -> int:
    """Bytes of ``tensor``'s pages in memory (mincore; the tensor starts on a page boundary)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    pages = -(-tensor.nbytes // mmap.PAGESIZE)
    flags = (ctypes.c_ubyte * pages)()
    assert libc.mincore(ctypes.c_void_p(tensor.data_ptr()), ctypes.c_size_t(tensor.nbytes), flags) == 0
    return sum(flag & 1 for flag in flags) * mmap.PAGESIZE


@pytest.mark.parametrize("theta", [1e6, 1e4])  # Gemma 3's global and local RoPE
def test_tables_filled_in_steps_equal_tables_built_whole(theta):
    inv_freq = _inverse_frequencies(theta)
    rotary = RotaryEmbedding(inv_freq, POSITIONS, torch.float32)
    assert rotary.num_rows == 0
    for reached in (1, 700, 5001, 5002, 20000, POSITIONS):
        rotary.fill(reached)
        assert rotary.num_rows == min(POSITIONS, -(-reached // ROWS_PER_FILL) * ROWS_PER_FILL)
    cos, sin_signed = _whole_tables(inv_freq, POSITIONS)
    assert torch.equal(rotary.cos, cos) and torch.equal(rotary.sin_signed, sin_signed)


def test_a_short_request_makes_only_its_rows_resident():
    rotary = RotaryEmbedding(_inverse_frequencies(1e6), POSITIONS, torch.float32)
    assert rotary.cos.nbytes == rotary.sin_signed.nbytes == POSITIONS * HEAD_DIM * 4  # 32 MiB each, reserved
    assert _resident_bytes(rotary.cos) == _resident_bytes(rotary.sin_signed) == 0
    cos, sin_signed = rotary.angles(torch.arange(200)[None, :])  # a 200-token request: [1, 200, 1, D]
    assert rotary.num_rows == ROWS_PER_FILL
    filled = ROWS_PER_FILL * HEAD_DIM * 4  # 512 KiB
    assert _resident_bytes(rotary.cos) == _resident_bytes(rotary.sin_signed) == filled
    whole_cos, whole_sin = _whole_tables(_inverse_frequencies(1e6), 200)
    assert torch.equal(cos[0, :, 0], whole_cos) and torch.equal(sin_signed[0, :, 0], whole_sin)
