"""Linear layers: int8 and int4 weight-only layers, and fused projection groups that compute exactly what their parts compute."""

from __future__ import annotations

import pytest
import torch

from mcp.engine.layers.linear import Int4Linear, Int8Linear, Linear, LinearGroup
from mcp.engine.layers.rotary import RotaryEmbedding, apply_rotary
from mcp.engine.quant import int4pack, int8


def _int4_layer(rows: int, cols: int, seed: int, bias: bool) -> Int4Linear:
    generator = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (rows, cols), generator=generator, dtype=torch.uint8)
    scale_offset = torch.stack(
        (torch.rand(rows, cols // 32, generator=generator) * 0.02,
         torch.randn(rows, cols // 32, generator=generator) * 0.05), dim=-1)
    layout = int4pack.runtime_layout()
    return Int4Linear(int4pack.pack(codes, layout), int4pack.kernel_scale_and_zero(scale_offset, torch.bfloat16),
                      layout, torch.randn(rows, generator=generator) if bias else None,
                      prefill_dtype=torch.float32, cache_dense=False, decode_max_rows=16)


@pytest.mark.parametrize("rows", [1, 3, 40])  # decode kernel, decode kernel, dense prefill path
def test_fused_int4_group_equals_its_parts(rows):
    parts = [_int4_layer(128, 64, 1, bias=True), _int4_layer(64, 64, 2, bias=False), _int4_layer(64, 64, 3, bias=True)]
    group = LinearGroup(parts)
    assert len(group.parts) == 1 and group.sizes == [128, 64, 64]  # one matrix, one kernel call
    x = torch.randn(1, rows, 64)
    with torch.inference_mode():
        want = torch.cat([part(x) for part in parts], dim=-1)
        got = group(x)
    assert got.shape == (1, rows, 256)
    assert torch.equal(got, want)


def test_a_group_with_a_dense_part_keeps_separate_matrices():
    parts = [_int4_layer(64, 64, 4, bias=False), Linear(torch.randn(32, 64))]
    group = LinearGroup(parts)
    assert len(group.parts) == 2 and group.sizes == [64, 32]
    x = torch.randn(2, 1, 64)
    with torch.inference_mode():
        assert torch.equal(group(x), torch.cat([parts[0](x), parts[1](x)], dim=-1))


def test_rotary_equals_the_rotate_half_formula():
    dim = 16
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    rotary = RotaryEmbedding(inv_freq, 64, torch.float32)
    x = torch.randn(2, 5, 3, dim)  # [B, T, heads, D]
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    freqs = positions[..., None].float() * inv_freq  # [B, T, D/2]
    cos = torch.cat((freqs.cos(), freqs.cos()), -1)[:, :, None]
    sin = torch.cat((freqs.sin(), freqs.sin()), -1)[:, :, None]
    rotate_half = torch.cat((-x[..., dim // 2:], x[..., : dim // 2]), dim=-1)
    assert torch.equal(apply_rotary(x, rotary.angles(positions)), x * cos + rotate_half * sin)


def _int8_layer(rows: int, cols: int, seed: int, bias: bool) -> Int8Linear:
    generator = torch.Generator().manual_seed(seed)
    codes, scales = int8.quantize(torch.randn(rows, cols, generator=generator) * 0.05)
    return Int8Linear(codes, scales, torch.randn(rows, generator=generator) if bias else None,
                      prefill_dtype=torch.float32, cache_dense=False, decode_max_rows=16)


def test_int8_quantization_is_symmetric_per_row():
    weight = torch.tensor([[0.5, -1.0, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0]])
    codes, scales = int8.quantize(weight)
    assert codes.dtype == torch.int8 and codes[0].tolist() == [64, -127, 32, 0]
    assert scales.tolist() == [pytest.approx(1 / 127), 1.0]  # an all-zero row gets scale 1
    assert torch.equal(int8.dequantize(codes, scales)[1], torch.zeros(4))
    error = (int8.dequantize(codes, scales) - weight).abs().max().item()
    assert error <= 0.5 / 127 + 1e-7


@pytest.mark.parametrize("rows", [1, 5, 40])
def test_int8_layer_matches_its_dequantized_weight(rows):
    layer = _int8_layer(64, 96, 5, bias=True)
    x = torch.randn(1, rows, 96)
    weight = int8.dequantize(layer.codes, layer.scales)  # the bf16 scales the kernel reads
    want = x @ weight.T + layer.bias
    with torch.inference_mode():
        got = layer(x)
    assert got.dtype == torch.float32 and got.shape == (1, rows, 64)
    # the decode kernel takes bf16 activations and gives bf16 sums: ~3 significant digits
    tolerance = 1e-5 if rows > 16 else 2e-2
    assert torch.allclose(got, want, rtol=tolerance, atol=tolerance * want.abs().max().item())


def test_fused_int8_group_equals_its_parts():
    parts = [_int8_layer(64, 64, 6, bias=False), _int8_layer(32, 64, 7, bias=True)]
    group = LinearGroup(parts)
    assert len(group.parts) == 1 and group.sizes == [64, 32]
    x = torch.randn(1, 2, 64)
    with torch.inference_mode():
        assert torch.equal(group(x), torch.cat([part(x) for part in parts], dim=-1))
