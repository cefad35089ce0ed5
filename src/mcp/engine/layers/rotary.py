"""Rotary position embeddings in the rotate-half layout, with precomputed cos/sin tables.

The ``.mcp`` compiler stores Q/K rows in Hugging Face's layout, so one convention serves
GGUF and HF sources alike. Tables are reserved for every position up to the context length
at load and filled as positions are reached (``RotaryEmbedding.fill``); a step only gathers
rows. Partial rotary (Phi-4-mini's ``rotary_dim``): the tables cover
the first ``rotary_dim`` dims of a head, which turn in rotate-half order among themselves; the
others pass as they are.
"""

from __future__ import annotations

import math
import mmap
import threading

import torch

from mcp.modelfile.spec import ArchitectureConfig, RopeScaling


def inverse_frequencies(
    arch: ArchitectureConfig, freq_factors: torch.Tensor | None = None
) -> torch.Tensor:
    """RoPE inverse frequencies [rotary_dim / 2], scaled as the config asks. ``freq_factors``:
    GGUF's ``rope_freqs``, or for "longrope" the short or long factors the model chose."""
    dim = arch.rotary_dim or arch.head_dim
    exponents = torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float32) / dim
    inv_freq = 1.0 / (arch.rope_theta**exponents)
    scaling = arch.rope_scaling
    if scaling is None:
        return inv_freq
    if scaling.kind == "linear":
        return inv_freq / scaling.factor
    if scaling.kind == "llama3":
        return _llama3_scaled(inv_freq, scaling)
    if scaling.kind == "freq_factors":
        if freq_factors is None:
            raise ValueError("rope scaling 'freq_factors' needs the model.rope_freqs tensor")
        return inv_freq / freq_factors.to(torch.float32)
    if scaling.kind == "longrope":  # as transformers' _compute_longrope_parameters, operation for operation
        if freq_factors is None:
            raise ValueError("rope scaling 'longrope' needs the model.rope_factors_short or _long tensor")
        return 1.0 / (freq_factors.to(torch.float32) * arch.rope_theta**exponents)
    raise ValueError(f"unknown rope scaling kind {scaling.kind!r}")


def _llama3_scaled(inv_freq: torch.Tensor, scaling: RopeScaling) -> torch.Tensor:
    old_context = scaling.original_max_position_embeddings
    low_freq_wavelen = old_context / scaling.low_freq_factor
    high_freq_wavelen = old_context / scaling.high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / scaling.factor, inv_freq)
    smooth = (old_context / wavelen - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor
    )
    smoothed = (1 - smooth) * scaled / scaling.factor + smooth * scaled
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, scaled)


# rows computed at a time as positions are reached: 512 KiB of Gemma 3's four tables (head dim 256)
ROWS_PER_FILL = 512


class RotaryEmbedding(torch.nn.Module):
    """Holds cos/sin tables [max_positions, rotary_dim]; ``angles`` gathers a forward's rows once.

    The tables are reserved for every position but filled ``ROWS_PER_FILL`` rows at a time as
    positions are reached (``fill``): on the CPU their untouched pages are never resident, so a
    short request holds a few hundred KiB of what Gemma 3's four tables take at its 32k context
    (128 MiB in fp32), and the pointers the native step reads never move. Each row's values are
    the same whenever it is filled. On an accelerator the tables are filled whole at first use
    (finding the highest position there would wait for the device).

    The rotate-half product ``cat(-x2, x1) * sin`` is computed as ``cat(x2, x1) * sin_signed``
    with ``sin_signed = cat(-sin1, sin2)``: the same values (negation is exact), one flip
    instead of two slices, a negation and a concatenation.
    """

    def __init__(self, inv_freq: torch.Tensor, max_positions: int, dtype: torch.dtype, scale: float = 1.0) -> None:
        super().__init__()
        self._inv_freq = inv_freq.to(torch.float32)  # [rotary_dim / 2]
        self._scale = scale
        self._lock = threading.Lock()  # steps of one model may run on several threads
        self.num_rows = 0  # rows 0..num_rows-1 are filled
        shape = (max_positions, 2 * inv_freq.numel())
        self.register_buffer("cos", _reserved(shape, dtype), persistent=False)
        self.register_buffer("sin_signed", _reserved(shape, dtype), persistent=False)

    @property
    def max_positions(self) -> int:
        return self.cos.shape[0]

    def fill(self, num_positions: int) -> None:
        """Fill the rows of positions 0..num_positions-1 (rounded up to whole ``ROWS_PER_FILL``)."""
        if num_positions <= self.num_rows:
            return
        with self._lock:
            start = self.num_rows
            stop = min(self.max_positions, -(-num_positions // ROWS_PER_FILL) * ROWS_PER_FILL)
            if stop <= start:
                return
            cos, sin_signed = _rows(self._inv_freq, start, stop, self._scale)
            self.cos[start:stop] = cos
            self.sin_signed[start:stop] = sin_signed
            self.num_rows = stop

    def angles(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin [B, T, 1, D] for token positions [B, T]. Compiled, the rows must be
        filled before the call (``fill``): a traced step cannot read the positions."""
        if not torch.compiler.is_compiling() and self.num_rows < self.max_positions and positions.numel():
            self.fill(int(positions.max()) + 1 if positions.is_cpu else self.max_positions)
        return self.cos[positions].unsqueeze(2), self.sin_signed[positions].unsqueeze(2)


def apply_rotary(x: torch.Tensor, angles: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Rotate heads x [B, T, heads, D] (any heads: q and k together) by ``angles``; angles
    [..., R] with R < D turn the first R dims only (partial rotary)."""
    cos, sin_signed = angles
    if cos.shape[-1] < x.shape[-1]:
        rotated = cos.shape[-1]
        return torch.cat((apply_rotary(x[..., :rotated], angles), x[..., rotated:]), dim=-1)
    batch, length, heads, dim = x.shape
    swapped = x.reshape(batch, length, heads, 2, dim // 2).flip(3).view(batch, length, heads, dim)
    return x * cos + swapped * sin_signed


def _reserved(shape: tuple[int, int], dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor in zeroed pages of its own mapping: none is resident until written (from
    the C heap, pages freed earlier may be reused and resident already). Small pages even where
    transparent huge pages are on for every mapping: a fill of 512 rows then makes its own
    pages resident, not 2 MiB of each table."""
    nbytes = math.prod(shape) * dtype.itemsize
    pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # Linux
        pages.madvise(mmap.MADV_NOHUGEPAGE)
    return torch.frombuffer(pages, dtype=dtype).view(shape)


def _rows(inv_freq: torch.Tensor, start: int, stop: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin [stop - start, D] fp32 of positions start..stop-1; ``scale`` multiplies
    both (longrope's attention factor, as transformers applies it, in fp32)."""
    positions = torch.arange(start, stop, dtype=torch.float32)
    freqs = torch.outer(positions, inv_freq)  # [P, D/2]
    cos, sin = freqs.cos(), freqs.sin()
    if scale != 1.0:
        cos, sin = cos * scale, sin * scale
    return torch.cat((cos, cos), dim=-1), torch.cat((-sin, sin), dim=-1)
