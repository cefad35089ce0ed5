"""GGUF's 4-, 5- and 6-bit kinds and Q8_0 re-laid 16 rows at a time (the x16 kinds) and their integer dots.

Re-laying moves GGUF's codes and scales, so the values must still equal ``gguf.quants``' bit
for bit (random blocks, every kind of half, extreme scales). The integer dots quantize each
activation block of 32 to one or two int8 digits and sum the codes' products exactly in int32,
so their result is checked against the fp64 product of the weights' values with the quantized
activations (only fp32 rounding apart) and against the exact product (within what the
activations' rounding allows); and the plain C++, AVX2 and AVX-512 builds must give the same
bits, whatever the number of activation rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mcp.engine import kernels
from mcp.engine.kernels import INTERLEAVED_KINDS, QuantMatrix

from test_block_kernels import EXTREME_HALVES, HALVES, assert_same_bits, matrix_of, random_blocks, reference
from test_kernels import isa  # noqa: F401  (the fixture: every ISA this CPU has)

SOURCES = sorted(kind for kind in INTERLEAVED_KINDS.values() if kind != "int8")  # Q8_0 (int8): below


def k_of(kind: str, blocks: int = 2) -> int:
    return blocks * max(kernels.BLOCK_KINDS[kind][0], 64)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, on inf * 0 in the reference
@pytest.mark.parametrize("kind", SOURCES)
def test_interleaved_values_equal_gguf_bit_for_bit(kind):
    k = k_of(kind)
    blocks = random_blocks(kind, 48, k, seed=11)  # random halves: NaN, subnormal, infinite among them
    want = reference(kind, blocks, k)
    matrix = matrix_of(kind, blocks).interleaved()
    assert matrix.kind == f"{kind}x16" and matrix.shape == (48, k)
    assert_same_bits(matrix.dequantize().numpy(), want)
    out = torch.empty(13, k)
    assert_same_bits(matrix.dequantize_rows(7, 20, out).numpy(), want[7:20])  # across a tile's edge
    rows = torch.tensor([[47, 0], [16, 31]])
    assert_same_bits(matrix.rows(rows).numpy(), want[rows.numpy()])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("kind", SOURCES)
def test_interleaved_values_equal_gguf_with_extreme_scales(kind):
    nbytes = kernels.BLOCK_KINDS[kind][1]
    k = kernels.BLOCK_KINDS[kind][0]
    count = len(EXTREME_HALVES) ** len(HALVES[kind])
    rows = -(-count // 16) * 16
    blocks = random_blocks(kind, rows, k, seed=12).reshape(rows, 1, nbytes)
    grids = np.meshgrid(*[EXTREME_HALVES] * len(HALVES[kind]), indexing="ij")
    for offset, values in zip(HALVES[kind], grids):
        halves = np.resize(values.reshape(-1), rows).astype(np.uint16)
        blocks[:, 0, offset:offset + 2] = halves.view(np.uint8).reshape(rows, 2)
    if kind == "q6_k":
        blocks[:, 0, 192:208] = np.array([127, -128, 1, -1, 0] * 3 + [127], dtype=np.int8).view(np.uint8)
    blocks = blocks.reshape(rows, -1)
    assert_same_bits(matrix_of(kind, blocks).interleaved().dequantize().numpy(), reference(kind, blocks, k))


def quantized_x(x: torch.Tensor, digits: int) -> torch.Tensor:
    """The activations as the integer dots see them: d * q1, or d * (128 q1 + q2)."""
    codes, scales = kernels.quantize_activations(x, digits)
    q = codes[0].double() * (128 if digits == 2 else 1) + (codes[1].double() if digits == 2 else 0)
    return (q.unflatten(-1, (-1, 32)) * scales.double()[..., None]).flatten(-2)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("digits", [1, 2])
@pytest.mark.parametrize("m", [1, 4, 6])
def test_integer_dots_sum_the_quantized_activations_exactly(isa, kind, digits, m):
    k = k_of(kind, 3)
    blocks = random_blocks(kind, 64, k, seed=m + digits, scale_bytes=True)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(m))
    # Without the mins (Q4_1's m, Q4_K's dmin: they meet x's exact fp32 sums, not its codes)
    # every product is codes times codes: exact in int32, then fp32 rounding of each group's
    # scaled sum is all that is left.
    no_mins = blocks.reshape(64, -1, kernels.BLOCK_KINDS[kind][1]).copy()
    if kind in ("q4_1", "q4_k", "q5_1", "q5_k"):
        no_mins[:, :, 2:4] = 0
    no_mins = no_mins.reshape(64, -1)
    values = torch.from_numpy(reference(kind, no_mins, k)).double()
    got = matrix_of(kind, no_mins).interleaved().matmul(x, x_digits=digits)
    assert got.dtype == torch.float32 and got.shape == (m, 64)
    magnitude = (quantized_x(x, digits).abs() @ values.abs().T).max()
    assert (got.double() - quantized_x(x, digits) @ values.T).abs().max() <= 1e-5 * magnitude
    values = torch.from_numpy(reference(kind, blocks, k)).double()
    got = matrix_of(kind, blocks).interleaved().matmul(x, x_digits=digits)
    exact = x.double() @ values.T
    bound = {1: 1e-2, 2: 1e-4}[digits]  # relative to the largest output, measured ~4e-3 and ~4e-5
    assert (got.double() - exact).abs().max() <= bound * exact.abs().max()


@pytest.mark.parametrize("kind", SOURCES)
def test_every_build_gives_the_same_bits(kind):
    k = k_of(kind, 2)
    matrix = matrix_of(kind, random_blocks(kind, 32, k, seed=21, scale_bytes=True)).interleaved()
    x = torch.randn(5, k, generator=torch.Generator().manual_seed(3))
    outputs = on_every_build(lambda: [matrix.matmul(x, x_digits=digits) for digits in (1, 2)])
    for name, got in outputs.items():
        for digits, (a, b) in enumerate(zip(got, outputs["scalar"]), start=1):
            assert torch.equal(a, b), (name, digits)


def on_every_build(compute) -> dict:
    """compute() on each instruction-set build this CPU has: build name -> its result."""
    best, outputs = kernels.isa(), {}
    try:
        for name in ("scalar", "avx2", "avx512"):
            try:
                kernels.set_isa(name)
            except ValueError:
                continue  # this CPU lacks it
            outputs[name] = compute()
    finally:
        kernels.set_isa(best)
    return outputs


@pytest.mark.parametrize("kind", SOURCES)
def test_a_rows_result_does_not_depend_on_the_other_rows(kind):
    """Each activation row alone gives the bits it gets among others (a sequence's tokens do
    not depend on what shares its step)."""
    k = k_of(kind, 2)
    matrix = matrix_of(kind, random_blocks(kind, 16, k, seed=22, scale_bytes=True)).interleaved()
    x = torch.randn(7, k, generator=torch.Generator().manual_seed(5))
    together = matrix.matmul(x, x_digits=2)
    for row in range(7):
        assert torch.equal(matrix.matmul(x[row:row + 1], x_digits=2)[0], together[row]), row


@pytest.mark.parametrize("kind", SOURCES)
def test_exact_products_of_an_interleaved_matrix_are_the_blocks(kind):
    k = k_of(kind, 2)
    blocks = random_blocks(kind, 32, k, seed=23, scale_bytes=True)
    x = torch.randn(2, k, generator=torch.Generator().manual_seed(6))
    values = torch.from_numpy(reference(kind, blocks, k)).double()
    got = matrix_of(kind, blocks).interleaved().matmul(x)
    tolerance = 1e-5 * (x.double().abs() @ values.abs().T).max()
    assert (got.double() - x.double() @ values.T).abs().max() <= tolerance


def test_only_gguf_kinds_in_whole_tiles_interleave():
    with pytest.raises(ValueError, match="of a multiple of 16 rows interleave, got q4_0 with 24 rows"):
        matrix_of("q4_0", random_blocks("q4_0", 24, 64, seed=1)).interleaved()
    int4 = QuantMatrix("int4", torch.zeros(16, 32, dtype=torch.uint8), torch.ones(16, 2, 2))
    with pytest.raises(ValueError, match="got int4 with 16 rows"):
        int4.interleaved()
    with pytest.raises(ValueError, match="its rows come in tiles of 16, got 8 rows"):
        QuantMatrix("q4_0x16", torch.zeros(8, 18, dtype=torch.uint8), None)


def test_interleaved_parts_concatenate_tile_after_tile():
    a, b = (matrix_of("q6_k", random_blocks("q6_k", rows, 256, seed=rows, scale_bytes=True)) for rows in (16, 32))
    joined = QuantMatrix.concat([a.interleaved(), b.interleaved()])
    assert joined.kind == "q6_kx16" and joined.shape == (48, 256)
    assert_same_bits(joined.dequantize().numpy(), np.concatenate([a.dequantize().numpy(), b.dequantize().numpy()]))


def q8_0_matrix(rows: int, k: int, seed: int, scales_dtype=torch.float16) -> QuantMatrix:
    """The int8 kind as a Q8_0 file gives it: codes -128..127 (the extreme one included), fp16 scales."""
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(-128, 128, (rows, k), dtype=torch.int8, generator=g)
    codes[0, :4] = torch.tensor([-128, 127, 0, -1], dtype=torch.int8)
    return QuantMatrix("int8", codes, (torch.rand(rows, k // 32, generator=g) * 0.01).to(scales_dtype))


@pytest.mark.parametrize("digits", [1, 2])
def test_q8_0_interleaved_keeps_its_values_and_sums_exactly(isa, digits):
    matrix = q8_0_matrix(48, 256, seed=31)
    laid = matrix.interleaved()
    assert laid.kind == "q8_0x16" and laid.shape == (48, 256) and laid.qparams is None
    values = matrix.dequantize()
    assert torch.equal(laid.dequantize(), values)
    assert torch.equal(laid.rows(torch.tensor([0, 47, 17])), values[[0, 47, 17]])
    x = torch.randn(5, 256, generator=torch.Generator().manual_seed(digits))
    got = laid.matmul(x, x_digits=digits).double()
    magnitude = (quantized_x(x, digits).abs() @ values.double().abs().T).max()
    assert (got - quantized_x(x, digits) @ values.double().T).abs().max() <= 1e-5 * magnitude


def test_q8_0_interleaved_gives_the_same_bits_on_every_build():
    laid = q8_0_matrix(32, 128, seed=32).interleaved()
    x = torch.randn(5, 128, generator=torch.Generator().manual_seed(2))
    outputs = on_every_build(lambda: laid.matmul(x, x_digits=2))
    assert all(torch.equal(got, outputs["scalar"]) for got in outputs.values())


def q8_0_blocks(matrix: QuantMatrix) -> torch.Tensor:
    """The GGUF Q8_0 blocks [N, K/32 * 34] of an int8 matrix with fp16 scales: d, then 32 codes."""
    n, k = matrix.shape
    scales = matrix.qparams.view(torch.uint8).reshape(n, k // 32, 2)
    codes = matrix.codes.view(torch.uint8).reshape(n, k // 32, 32)
    return torch.cat((scales, codes), dim=2).reshape(n, k // 32 * 34).contiguous()


def test_q8_0_re_laid_straight_from_its_blocks_is_the_same_bytes():
    """A Q8_0 file's matrix is re-laid from its blocks, without splitting codes and scales first."""
    matrix = q8_0_matrix(48, 256, seed=34)
    laid = QuantMatrix.interleaved_q8_0(q8_0_blocks(matrix), (48, 256))
    assert laid.kind == "q8_0x16" and laid.shape == (48, 256)
    assert torch.equal(laid.codes, matrix.interleaved().codes)


@pytest.mark.parametrize("kind", ["q4_k", "q6_k", "int8", "q8_0 blocks"])
def test_re_laid_part_by_part_is_the_same_bytes(kind, monkeypatch):
    """Rows are re-laid INTERLEAVE_ROWS at a time (each part's file pages released after it):
    parts of one tile give the bytes of one pass."""
    if kind == "int8":
        matrix = q8_0_matrix(80, 256, seed=35)
        lay = matrix.interleaved
    elif kind == "q8_0 blocks":
        blocks = q8_0_blocks(q8_0_matrix(80, 256, seed=36))
        lay = lambda: QuantMatrix.interleaved_q8_0(blocks, (80, 256))  # noqa: E731
    else:
        lay = matrix_of(kind, random_blocks(kind, 80, 256, seed=37, scale_bytes=True)).interleaved
    whole = lay().codes
    monkeypatch.setattr(kernels, "INTERLEAVE_ROWS", 16)
    assert torch.equal(lay().codes, whole)


@pytest.mark.parametrize("blocks, shape", [(torch.zeros(48, 270, dtype=torch.uint8), (48, 256)),  # wrong width
                                           (torch.zeros(8, 272, dtype=torch.uint8), (8, 256)),  # half a tile
                                           (torch.zeros(16, 272, dtype=torch.int8), (16, 256))])  # not bytes
def test_q8_0_blocks_of_the_wrong_form_are_refused(blocks, shape):
    with pytest.raises(ValueError, match="Q8_0 blocks of a"):
        QuantMatrix.interleaved_q8_0(blocks, shape)


def test_int8_with_fp32_scales_is_not_interleaved():
    matrix = q8_0_matrix(16, 64, seed=33, scales_dtype=torch.float32)
    assert not matrix.interleavable
    with pytest.raises(ValueError, match=r"\(with fp16 scales\)"):
        matrix.interleaved()


def resident_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))


def test_released_pages_of_a_model_file_leave_resident_memory(smollm2_auto_mcp):
    """What NativeLinear.interleave does with the file's copy of a matrix it re-laid: read once,
    then handed back, so that the process does not hold the weights twice."""
    from mcp.modelfile.reader import open_model

    with open_model(smollm2_auto_mcp) as model_file:
        tensor = max((model_file.tensor(spec.name) for spec in model_file.header.tensors), key=lambda t: t.nbytes)
        assert tensor.nbytes > 8 << 20
        before = resident_kib()
        assert int(tensor.view(torch.uint8).sum()) > 0  # every page read
        touched = resident_kib()
        assert touched - before > tensor.nbytes // 1024 // 2
        assert kernels.release_pages(tensor)
        assert touched - resident_kib() > tensor.nbytes // 1024 // 2
        assert int(tensor.view(torch.uint8).sum()) > 0  # still readable: the file's pages come back


def test_int8x2_dots_re_lay_each_fused_matrix_once(smollm2_auto_mcp):
    """With int8x2 dots (the default on AVX2/AVX-512; asked for here, so that every build runs
    it) every fused q/k/v and gate/up matrix, the o and down projections and the tied Q8_0
    head are re-laid, the embedding looks up in the head's re-laid matrix, and their values
    are the file's."""
    from mcp.engine.engine import EngineOptions, NativeEngine
    from mcp.modelfile.reader import open_model

    with open_model(smollm2_auto_mcp) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", decode_dots="int8x2"))
        q_values = QuantMatrix("q4_1", model_file.tensor("model.layers.3.self_attn.q_proj.weight"), None).dequantize()
    assert engine.plan.decode_dots == "int8x2"
    model = engine.model
    for layer in model.layers:
        for module in (layer.self_attn.qkv_proj.parts[0], layer.self_attn.o_proj, layer.mlp.gate_up_proj.parts[0],
                       layer.mlp.down_proj):
            assert module.matrix.kind == "q4_1x16" and module.codes is module.matrix.codes
    assert model.lm_head.matrix.kind == "q8_0x16" and model.embed_tokens.matrix is model.lm_head.matrix
    fused = model.layers[3].self_attn.qkv_proj.parts[0].matrix
    assert torch.equal(fused.dequantize_rows(0, 576, torch.empty(576, 576)), q_values)
