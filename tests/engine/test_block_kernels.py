"""The native kernels on GGUF's own Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K and Q6_K blocks, on every ISA
this CPU has.

Each kind's dequantized values must equal ``gguf.quants.dequantize`` (ggml's reference) bit for
bit in fp32, on random blocks whose fp16 fields take every kind of half (subnormal, infinite,
NaN) and on blocks with extreme scales; its products must equal the fp64 product of those
values within fp32 summation error, for one activation row (decode) and several.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize as gguf_dequantize

from mcp.engine import kernels
from mcp.engine.kernels import BLOCK_KINDS, QuantMatrix

from test_kernels import isa  # noqa: F401  (the fixture: every ISA this CPU has)

KINDS = sorted(BLOCK_KINDS)
# The fp16 fields of each block (byte offsets): scales, and the mins/offsets where there are.
HALVES = {"q4_0": (0,), "q4_1": (0, 2), "q4_k": (0, 2), "q5_0": (0,), "q5_1": (0, 2), "q5_k": (0, 2), "q6_k": (208,)}
EXTREME_HALVES = np.array([0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x8001, 0x0000, 0x8000],
                          dtype=np.uint16)


def random_blocks(kind: str, rows: int, k: int, seed: int, scale_bytes: bool = False) -> np.ndarray:
    """uint8 [rows, row bytes] of random blocks; ``scale_bytes``: every fp16 field a small
    finite scale (values around ±0.05), else the fields are random bytes like the rest."""
    weights, nbytes = BLOCK_KINDS[kind]
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(rows, k // weights, nbytes), dtype=np.uint8)
    if scale_bytes:
        for offset in HALVES[kind]:
            scale = rng.uniform(1e-4, 2e-3, size=blocks.shape[:2]).astype(np.float16)
            blocks[:, :, offset:offset + 2] = scale.view(np.uint8).reshape(*blocks.shape[:2], 2)
    return blocks.reshape(rows, -1)


def reference(kind: str, blocks: np.ndarray, k: int) -> np.ndarray:
    qtype = gguf.GGMLQuantizationType[kind.upper()]
    return gguf_dequantize(blocks, qtype).reshape(blocks.shape[0], k).astype(np.float32)


def matrix_of(kind: str, blocks: np.ndarray) -> QuantMatrix:
    return QuantMatrix(kind, torch.from_numpy(np.ascontiguousarray(blocks)), None)


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit, except that a NaN need only be a NaN (its payload is the CPU's)."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, on inf * 0 in the reference
@pytest.mark.parametrize("kind", KINDS)
def test_dequantize_equals_gguf_bit_for_bit_on_random_blocks(isa, kind):
    weights = BLOCK_KINDS[kind][0]
    blocks = random_blocks(kind, 40, 4 * max(weights, 64), seed=1)  # random halves: ~3% NaN, ~3% subnormal
    want = reference(kind, blocks, 4 * max(weights, 64))
    assert np.isnan(want).any()  # the draw covers them (infinities: the next test)
    matrix = matrix_of(kind, blocks)
    assert_same_bits(matrix.dequantize().numpy(), want)
    rounded = torch.from_numpy(want).to(torch.bfloat16).float().numpy()
    assert_same_bits(matrix.dequantize(torch.bfloat16).float().numpy(), rounded)
    rows = torch.tensor([[3, 0], [39, 3]])
    assert_same_bits(matrix.rows(rows).numpy(), want[rows.numpy()])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("kind", KINDS)
def test_dequantize_equals_gguf_with_extreme_scales(isa, kind):
    """Every fp16 field of every block set to each extreme half in turn (subnormal, largest,
    infinite, NaN, signed zeros), so scale * q and the mins meet them in every combination."""
    weights, nbytes = BLOCK_KINDS[kind]
    k = 2 * weights
    blocks = random_blocks(kind, len(EXTREME_HALVES) ** len(HALVES[kind]), k, seed=2).reshape(-1, 2, nbytes)
    grids = np.meshgrid(*[EXTREME_HALVES] * len(HALVES[kind]), indexing="ij")
    for offset, values in zip(HALVES[kind], grids):
        blocks[:, :, offset:offset + 2] = np.repeat(values.reshape(-1, 1), 2, axis=1).view(np.uint8).reshape(-1, 2, 2)
    if kind == "q6_k":  # its int8 sub-block scales at their extremes too
        blocks[:, 0, 192:208] = np.array([127, -128, 1, -1, 0] * 3 + [127], dtype=np.int8).view(np.uint8)
    blocks = blocks.reshape(blocks.shape[0], -1)
    assert_same_bits(matrix_of(kind, blocks).dequantize().numpy(), reference(kind, blocks, k))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n, blocks_per_row, m", [(37, 1, 1), (64, 3, 3), (1536, 2, 1), (200, 2, 9), (8, 1, 4)])
def test_matmul_equals_the_dequantized_product(isa, kind, n, blocks_per_row, m):
    k = blocks_per_row * max(BLOCK_KINDS[kind][0], 64)
    blocks = random_blocks(kind, n, k, seed=n + m, scale_bytes=True)
    values = torch.from_numpy(reference(kind, blocks, k)).double()
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(1))
    got = matrix_of(kind, blocks).matmul(x)
    assert got.dtype == torch.float32 and got.shape == (m, n)
    # fp32 sums of k products, as the int4 kernels' test allows: a few ulps of the largest partial sums
    tolerance = 1e-5 * (x.double().abs() @ values.abs().T).max()
    assert (got.double() - x.double() @ values.T).abs().max() <= tolerance


@pytest.mark.parametrize("kind", KINDS)
def test_a_rows_product_does_not_depend_on_the_tile_it_falls_in(isa, kind):
    k = max(BLOCK_KINDS[kind][0], 64)
    blocks = random_blocks(kind, 29, k, seed=5, scale_bytes=True)
    x = torch.randn(1, k, generator=torch.Generator().manual_seed(4))
    whole = matrix_of(kind, blocks).matmul(x)
    for row in range(29):
        assert torch.equal(matrix_of(kind, blocks[row:row + 1]).matmul(x)[0, 0], whole[0, row]), row


def test_integer_dots_leave_block_kinds_exact():
    """Block kinds have no integer dots: x_digits asks for them, the products stay exact."""
    blocks = random_blocks("q6_k", 16, 256, seed=7, scale_bytes=True)
    x = torch.randn(2, 256)
    matrix = matrix_of("q6_k", blocks)
    assert torch.equal(matrix.matmul(x, x_digits=1), matrix.matmul(x))


def test_every_isa_gives_close_results():
    blocks = random_blocks("q5_k", 77, 512, seed=8, scale_bytes=True)
    x = torch.randn(3, 512)
    best, outputs = kernels.isa(), {}
    try:
        for name in ("scalar", best):
            kernels.set_isa(name)
            outputs[name] = matrix_of("q5_k", blocks).matmul(x)
    finally:
        kernels.set_isa(best)
    assert torch.allclose(outputs[best], outputs["scalar"], rtol=1e-5, atol=1e-5)


def test_concat_joins_rows_of_one_kind_and_refuses_mixed_kinds():
    a, b = (matrix_of("q6_k", random_blocks("q6_k", rows, 256, seed=rows)) for rows in (3, 5))
    joined = QuantMatrix.concat([a, b])
    assert joined.shape == (8, 256) and joined.qparams is None
    assert_same_bits(joined.dequantize().numpy(), np.concatenate([a.dequantize().numpy(), b.dequantize().numpy()]))
    with pytest.raises(ValueError, match="kinds"):
        QuantMatrix.concat([a, matrix_of("q5_k", random_blocks("q5_k", 2, 256, seed=1))])


@pytest.mark.parametrize("codes, qparams, message", [
    (torch.zeros(4, 209, dtype=torch.uint8), None, r"whole blocks"),
    (torch.zeros(4, 210, dtype=torch.int8), None, r"uint8"),
    (torch.zeros(4, 210, dtype=torch.uint8), torch.zeros(4, 1), r"qparams None"),
    (torch.zeros(420, 2, dtype=torch.uint8).T, None, r"contiguous"),
])
def test_malformed_block_matrices_are_refused(codes, qparams, message):
    with pytest.raises(ValueError, match=message):
        QuantMatrix("q6_k", codes, qparams)
