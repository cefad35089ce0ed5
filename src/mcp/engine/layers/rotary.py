"""Rotary position embeddings in the rotate-half layout, with precomputed cos/sin tables.

The ``.mcp`` compiler stores Q/K rows in Hugging Face's layout, so one convention serves
GGUF and HF sources alike. Tables cover every position up to the context length once, at
load; a step only gathers rows. Partial rotary (Phi-4-mini's ``rotary_dim``): the tables cover
the first ``rotary_dim`` dims of a head, which turn in rotate-half order among themselves; the
others pass as they are.
"""

from __future__ import annotations

import functools
import math

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


class RotaryEmbedding(torch.nn.Module):
    """Holds cos/sin tables [max_positions, head_dim]; ``angles`` gathers a forward's rows once.

    The rotate-half product ``cat(-x2, x1) * sin`` is computed as ``cat(x2, x1) * sin_signed``
    with ``sin_signed = cat(-sin1, sin2)``: the same values (negation is exact), one flip
    instead of two slices, a negation and a concatenation.
    """

    def __init__(self, inv_freq: torch.Tensor, max_positions: int, dtype: torch.dtype, scale: float = 1.0) -> None:
        super().__init__()
        cos, sin_signed = _tables(tuple(inv_freq.tolist()), max_positions, dtype, scale)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin_signed", sin_signed, persistent=False)

    def angles(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin [B, T, 1, D] for token positions [B, T]."""
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


@functools.lru_cache(maxsize=8)
def _tables(inv_freq: tuple[float, ...], max_positions: int, dtype: torch.dtype,
            scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin [P, D] for every position, shared by every model with the same RoPE (read-only);
    ``scale`` multiplies both (longrope's attention factor, as transformers applies it, in fp32)."""
    positions = torch.arange(max_positions, dtype=torch.float32)
    freqs = torch.outer(positions, torch.tensor(inv_freq, dtype=torch.float32))  # [P, D/2]
    cos, sin = freqs.cos(), freqs.sin()
    if scale != 1.0:
        cos, sin = cos * scale, sin * scale
    return torch.cat((cos, cos), dim=-1).to(dtype), torch.cat((-sin, sin), dim=-1).to(dtype)
