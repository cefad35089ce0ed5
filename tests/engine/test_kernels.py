"""The native CPU kernels: products and values of grouped int4/int8 matrices on every ISA."""

from __future__ import annotations

import threading

import gguf
import numpy as np
import pytest
import torch

from mcp.engine import kernels
from mcp.engine.kernels import QuantMatrix, join_rows
from mcp.engine.quant import int4pack, int8

CPU_FLAGS = open("/proc/cpuinfo").read()
ISAS = ["scalar"] + [isa for isa, flag in (("avx2", " avx2 "), ("avx512", " avx512bw ")) if flag in CPU_FLAGS]


@pytest.fixture(params=ISAS)
def isa(request):
    best = kernels.isa()
    kernels.set_isa(request.param)
    yield request.param
    kernels.set_isa(best)


def random_matrix(kind: str, n: int, k: int, seed: int = 0, qparams_dtype=torch.float32) -> QuantMatrix:
    g = torch.Generator().manual_seed(seed)
    if kind.startswith("int4"):
        codes = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=g)
        return QuantMatrix("int4", codes, torch.randn(n, k // 32, 2, generator=g).to(qparams_dtype))
    codes = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=g)
    return QuantMatrix("int8", codes, torch.rand(n, k // 32, generator=g).to(qparams_dtype))


@pytest.mark.parametrize("kind", ["int4", "int8"])
@pytest.mark.parametrize("qparams_dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("n, k, m", [(37, 64, 1), (64, 576, 3), (1536, 576, 1), (200, 96, 9), (8, 32, 4)])
def test_matmul_equals_the_dequantized_product(isa, kind, qparams_dtype, n, k, m):
    matrix = random_matrix(kind, n, k, qparams_dtype=qparams_dtype)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(1))
    want = x.double() @ matrix.dequantize().double().T
    got = matrix.matmul(x)
    assert got.dtype == torch.float32 and got.shape == (m, n)
    # fp32 sums of k products: a few ulps of the largest partial sums
    tolerance = 1e-5 * (x.double().abs() @ matrix.dequantize().double().abs().T).max()
    assert (got.double() - want).abs().max() <= tolerance


def test_bf16_activations_and_outputs(isa):
    matrix = random_matrix("int4", 96, 128)
    x = torch.randn(2, 3, 128).to(torch.bfloat16)
    want = matrix.matmul(x.float())
    got = matrix.matmul(x)
    assert got.dtype == torch.bfloat16 and got.shape == (2, 3, 96)
    assert torch.equal(got, want.to(torch.bfloat16))  # the same fp32 sums, rounded once
    assert torch.equal(matrix.matmul(x.float(), out_dtype=torch.bfloat16), got)


@pytest.mark.parametrize("kind", ["int4", "int8"])
@pytest.mark.parametrize("qparams_dtype", [torch.float32, torch.float16])
def test_dequantize_gives_the_reference_values_exactly(isa, kind, qparams_dtype):
    matrix = random_matrix(kind, 72, 160, seed=4, qparams_dtype=qparams_dtype)
    if kind == "int4":
        codes = int4pack.unpack(matrix.codes, "rows")
        want = int4pack.dequantize_int4(codes, matrix.qparams)
    else:
        want = int8.dequantize_grouped(matrix.codes, matrix.qparams)
    got = matrix.dequantize()
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    assert torch.equal(matrix.dequantize(torch.bfloat16), want.to(torch.bfloat16))
    rows = torch.tensor([[5, 0], [71, 5]])
    assert torch.equal(matrix.rows(rows), want[rows])


def test_f16_halves_are_decoded_exactly_subnormals_included(isa):
    """Every finite fp16 value as a scale: the kernels' half -> float matches torch's."""
    halves = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(torch.float16)
    halves = halves[torch.isfinite(halves)].reshape(-1, 32)  # 63,488 values as [N, K/32] scales
    codes = torch.ones(halves.shape[0], 32 * 32, dtype=torch.int8)  # w = scale
    matrix = QuantMatrix("int8", codes, halves.contiguous())
    want = halves.to(torch.float32).repeat_interleave(32, dim=1)
    assert torch.equal(matrix.dequantize().view(torch.int32), want.view(torch.int32))


def test_every_isa_gives_close_results():
    """atol: the summation orders differ; over 300 random inputs the most seen was 4.3e-4
    (AVX2 against scalar), so 1e-3; the input is seeded so that the test does
    not depend on what ran before it (an unseeded one failed at 1e-4 after other modules)."""
    matrix = random_matrix("int4", 333, 256, seed=2)
    x = torch.randn(5, 256, generator=torch.Generator().manual_seed(11))
    outputs = {}
    best = kernels.isa()
    try:
        for name in ISAS:
            kernels.set_isa(name)
            outputs[name] = matrix.matmul(x)
    finally:
        kernels.set_isa(best)
    for name, out in outputs.items():
        assert torch.allclose(out, outputs["scalar"], rtol=1e-5, atol=1e-3), name


def test_thread_count_does_not_change_the_result():
    matrix = random_matrix("int8", 1000, 576, seed=6)
    x = torch.randn(3, 576)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = matrix.matmul(x)
        torch.set_num_threads(4)
        four = matrix.matmul(x)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, four)  # each output is one row's own sum, however rows are split


@pytest.mark.parametrize("kind", ["int4", "int8"])
def test_a_rows_product_does_not_depend_on_the_tile_it_falls_in(isa, kind):
    # 61 rows: the one-row dot takes them in tiles of 12 (Intel AVX-512) or 4, then the rest
    # one at a time; each row keeps its own accumulator, so the bits match a matrix of one row
    matrix = random_matrix(kind, 61, 576, seed=3, qparams_dtype=torch.float16)
    x = torch.randn(1, 576, generator=torch.Generator().manual_seed(4))
    whole = matrix.matmul(x)
    for row in range(61):
        alone = QuantMatrix(matrix.kind, matrix.codes[row:row + 1], matrix.qparams[row:row + 1]).matmul(x)
        assert torch.equal(alone[0, 0], whole[0, row]), row


@pytest.mark.parametrize("heads, kv_heads, head_dim", [(9, 3, 64), (3, 3, 64), (4, 1, 256), (8, 2, 128),
                                                     (2, 1, 32), (4, 2, 80), (2, 2, 16), (3, 1, 24), (2, 1, 40)])
@pytest.mark.parametrize("last", [0, 17, 89])
@pytest.mark.parametrize("part_positions", [0, 16, 32])
@pytest.mark.parametrize("kv_dtype", [torch.float32, torch.float16])
def test_paged_attention_is_the_softmax_over_the_visible_positions(isa, heads, kv_heads, head_dim, last,
                                                                  part_positions, kv_dtype):
    # head sizes that keep the output in registers (16 to 256 lanes) and one that does not (80),
    # sizes the scores take a vector at a time and sizes that are not whole vectors (24; 40 on
    # AVX-512), groups of 1 to 4 query heads per kv head, a dropped block, partial tiles of keys;
    # in one go or in parts combined after (parts of 16: the dropped block is a whole part); a
    # cache of floats or of halves (the reference reads the same halves, widened exactly)
    g = torch.Generator().manual_seed(heads * 1000 + head_dim + last)
    keys = torch.randn(12, 16, kv_heads, head_dim, generator=g).to(kv_dtype)
    values = torch.randn(12, 16, kv_heads, head_dim, generator=g).to(kv_dtype)
    q = torch.randn(heads, head_dim, generator=g) * 2
    table = torch.tensor([7, 2, -1, 10, 0, 5])  # positions 32..47 dropped by the window
    got = kernels.paged_attention(q, keys, values, table, last, part_positions)
    visible = [t for t in range(last + 1) if table[t // 16] >= 0]
    k = torch.stack([keys[table[t // 16], t % 16] for t in visible]).double()  # [T, kv_heads, D]
    v = torch.stack([values[table[t // 16], t % 16] for t in visible]).double()
    group = heads // kv_heads
    for h in range(heads):
        weights = torch.softmax(k[:, h // group] @ q[h].double() / head_dim ** 0.5, dim=0)
        assert (got[h].double() - weights @ v[:, h // group]).abs().max() < 1e-5, h


def test_paged_attention_refuses_what_it_cannot_read():
    keys = torch.zeros(4, 16, 2, 64)
    q = torch.zeros(4, 64)
    with pytest.raises(ValueError, match=r"table holds a block outside -1\.\.3"):
        kernels.paged_attention(q, keys, keys, torch.tensor([1, 4]), 20)
    with pytest.raises(ValueError, match="position 20 is in a dropped block"):
        kernels.paged_attention(q, keys, keys, torch.tensor([1, -1]), 20)
    with pytest.raises(ValueError, match="last position 40 is outside the table's 32 positions"):
        kernels.paged_attention(q, keys, keys, torch.tensor([1, 2]), 40)
    with pytest.raises(ValueError, match="3 query heads do not share 2 kv heads evenly"):
        kernels.paged_attention(torch.zeros(3, 64), keys, keys, torch.tensor([1, 2]), 3)
    with pytest.raises(ValueError, match="part_positions must be 0 or a positive multiple of the block size 16, got 24"):
        kernels.paged_attention(q, keys, keys, torch.tensor([1, 2]), 20, part_positions=24)
    with pytest.raises(ValueError, match="keys must be a contiguous CPU float32 or float16 tensor, got torch.bf"):
        kernels.paged_attention(q, keys.bfloat16(), keys, torch.tensor([1, 2]), 20)
    with pytest.raises(ValueError, match="keys and values must share a dtype, got torch.float16 and torch.float32"):
        kernels.paged_attention(q, keys.half(), keys, torch.tensor([1, 2]), 20)


def test_halves_round_as_torch_rounds(isa):
    # every magnitude a half has, and the ones it has not: normals over the whole exponent
    # range, ties between two halves (to even), subnormals and their ties, the last finite
    # half (65504), the tie above it (65520: infinity), infinities and NaN
    g = torch.Generator().manual_seed(11)
    spread = torch.randn(4000, generator=g) * torch.exp2(torch.randint(-30, 17, (4000,), generator=g).float())
    halves = torch.arange(0, 0x7c00, dtype=torch.int32).to(torch.int16).view(torch.float16).float()
    ties = (halves[:-1] + halves[1:]) / 2  # exactly between neighbours, in float32
    edges = torch.tensor([65504.0, 65519.0, 65520.0, 1e6, float("inf"), -float("inf"), 2.0 ** -25, 2.0 ** -26,
                          3 * 2.0 ** -25, 0.0, -0.0, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25])
    x = torch.cat([spread, halves, ties, -ties, edges]).contiguous()
    got = kernels.to_halves(x)
    assert torch.equal(got.view(torch.int16), x.half().view(torch.int16))  # bit for bit, signs of zero included
    assert kernels.to_halves(torch.tensor([float("nan")])).isnan().all()


def test_calls_from_several_threads_at_once():
    matrix = random_matrix("int4", 512, 256, seed=7)
    inputs = [torch.randn(2, 256, generator=torch.Generator().manual_seed(i)) for i in range(8)]
    wanted = [matrix.matmul(x) for x in inputs]
    results: dict[int, torch.Tensor] = {}

    def call(i: int) -> None:
        for _ in range(50):
            results[i] = matrix.matmul(inputs[i])

    workers = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(torch.equal(results[i], wanted[i]) for i in range(8))


def test_the_real_q8_0_head_keeps_its_gguf_values(smollm2_gguf):
    reader = gguf.GGUFReader(smollm2_gguf)
    tensor = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert tensor.tensor_type == gguf.GGMLQuantizationType.Q8_0
    rows, cols = int(tensor.shape[1]), int(tensor.shape[0])
    blocks = torch.from_numpy(np.array(tensor.data)).reshape(rows, -1)
    matrix = QuantMatrix("int8", *int8.codes_from_q8_0(blocks, (rows, cols)))
    theirs = gguf.quants.dequantize(np.array(tensor.data), tensor.tensor_type).reshape(rows, cols)
    assert np.array_equal(matrix.dequantize().numpy().view(np.uint32), theirs.view(np.uint32))


@pytest.mark.parametrize("codes, qparams, message", [
    (torch.zeros(4, 16, dtype=torch.uint8), torch.zeros(4, 1, 2, dtype=torch.bfloat16), "qparams"),
    (torch.zeros(4, 16, dtype=torch.int8), torch.zeros(4, 1, 2), "codes"),
    (torch.zeros(4, 15, dtype=torch.uint8), torch.zeros(4, 1, 2), "multiple of 32"),
    (torch.zeros(16, 4, dtype=torch.uint8).T, torch.zeros(4, 0, 2), "contiguous|expected"),
])
def test_malformed_int4_matrices_are_refused(codes, qparams, message):
    with pytest.raises(ValueError, match=message):
        QuantMatrix("int4", codes, qparams)


def test_bad_activations_and_options_are_refused():
    matrix = random_matrix("int4", 8, 64)
    with pytest.raises(ValueError, match=r"x must be a CPU float32/bfloat16 tensor \[\.\.\., 64\]"):
        matrix.matmul(torch.randn(2, 63))
    with pytest.raises(ValueError, match="float32/bfloat16"):
        matrix.matmul(torch.randn(2, 64).half())
    with pytest.raises(ValueError, match="kind must be one of int4, int8"):
        QuantMatrix("int3", matrix.codes, matrix.qparams)
    with pytest.raises(ValueError, match="instruction set 'neon'"):
        kernels.set_isa("neon")
    with pytest.raises(ValueError, match="kinds"):
        QuantMatrix.concat([matrix, random_matrix("int8", 8, 64)])


FORK_CHECK = r"""
import os, torch
from mcp.engine.kernels import QuantMatrix
torch.set_num_threads(2)
g = torch.Generator().manual_seed(0)
matrix = QuantMatrix("int4", torch.randint(0, 256, (1024, 128), dtype=torch.uint8, generator=g),
                     torch.randn(1024, 8, 2, generator=g))
x = torch.randn(2, 256, generator=g)
want = matrix.matmul(x)  # the parent's pool threads are running now
pid = os.fork()
if pid == 0:
    ok = all(torch.equal(matrix.matmul(x), want) for _ in range(20))
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_runs_the_kernels_on_its_own_threads():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", FORK_CHECK], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "child exit 0", proc.stderr[-2000:]


# -- int8 dots: activations quantized to int8 blocks of 32, integer products ---------------

def python_quantized(x: torch.Tensor, digits: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """The activation digit planes [digits, M, K] and scales as the module docstring defines
    them, in torch: x ~ scale * q1, or scale * (128 * q1 + q2) with two digits."""
    groups = x.unflatten(-1, (-1, 32))  # [M, K/32, 32]
    step = groups.abs().amax(-1) / 127  # fp32, as the kernel divides
    inverse = torch.where(step != 0, 1 / step, torch.zeros_like(step))
    high = torch.round(groups * inverse[..., None]).clamp(-127, 127)  # half to even, as nearbyint
    if digits == 1:
        return high.flatten(-2).to(torch.int8)[None], step
    low = torch.round((groups - high * step[..., None]) * (inverse * 128)[..., None]).clamp(-127, 127)
    return torch.stack([high.flatten(-2), low.flatten(-2)]).to(torch.int8), step / 128


def activation_values(codes: torch.Tensor) -> torch.Tensor:
    """The integer each block element stands for: q1, or 128 * q1 + q2."""
    return codes[0].double() if codes.shape[0] == 1 else codes[0].double() * 128 + codes[1].double()


def weight_codes(matrix: QuantMatrix) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Codes [N, K/32, 32], scales and offsets [N, K/32] in float64."""
    qparams = matrix.qparams.double()
    if matrix.kind == "int4":
        codes = int4pack.unpack(matrix.codes, "rows").double()
        return codes.unflatten(-1, (-1, 32)), qparams[..., 0], qparams[..., 1]
    return matrix.codes.double().unflatten(-1, (-1, 32)), qparams, torch.zeros_like(qparams)


@pytest.mark.parametrize("digits", [1, 2])
def test_activation_codes_are_the_defined_rounding(digits):
    x = torch.randn(7, 320, generator=torch.Generator().manual_seed(3)) * 3
    x[2, 32:64] = 0  # an all-zero block: scale 0, codes 0
    x[3, :32] = torch.arange(32) - 16.0  # exact multiples: ties of the rounding
    codes, scales = kernels.quantize_activations(x, digits)
    want_codes, want_scales = python_quantized(x, digits)
    assert codes.shape == (digits, 7, 320)
    assert torch.equal(scales, want_scales) and torch.equal(codes, want_codes)
    assert scales[2, 1] == 0 and not codes[:, 2, 32:64].any()
    if digits == 2:  # the low digit stays within half a high step: -64..64
        assert codes[1].abs().max() <= 64 and codes[1].abs().max() >= 60
    # each value within half a step of its code
    restored = (activation_values(codes).unflatten(-1, (-1, 32)) * scales.double()[..., None]).flatten(-2)
    assert ((restored - x.double()).abs() <= scales.double().repeat_interleave(32, dim=1) / 2 * (1 + 1e-5)).all()


@pytest.mark.parametrize("digits", [1, 2])
@pytest.mark.parametrize("kind", ["int4", "int8"])
@pytest.mark.parametrize("qparams_dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("n, k, m", [(37, 64, 1), (64, 576, 3), (1536, 576, 1), (200, 96, 9), (8, 32, 4),
                                     (131, 1536, 16), (5, 160, 2)])
def test_integer_dots_are_the_products_of_the_quantized_activations(isa, kind, qparams_dtype, n, k, m, digits):
    """Exactly sum_g scale_g d_g (q_g . qx_g) + offset_g sum(x_g), up to fp32 rounding."""
    matrix = random_matrix(kind, n, k, qparams_dtype=qparams_dtype)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(1))
    codes, scales, offsets = weight_codes(matrix)
    x_codes, x_scales = python_quantized(x, digits)
    dots = torch.einsum("mgk,ngk->mng", activation_values(x_codes).unflatten(-1, (-1, 32)), codes)  # [M, N, K/32]
    x_sums = x.double().unflatten(-1, (-1, 32)).sum(-1)  # [M, K/32]
    want = (dots * scales[None] * x_scales.double()[:, None]).sum(-1) + x_sums @ offsets.T
    got = matrix.matmul(x, x_digits=digits)
    assert got.dtype == torch.float32 and got.shape == (m, n)
    magnitude = (dots.abs() * (scales.abs()[None] * x_scales.double()[:, None])).sum(-1) + x_sums.abs() @ offsets.abs().T
    assert ((got.double() - want).abs() <= 1e-5 * magnitude.max() + 1e-6).all()


@pytest.mark.parametrize("digits", [1, 2])
@pytest.mark.parametrize("kind", ["int4", "int8"])
@pytest.mark.parametrize("n, k, m", [(64, 576, 1), (96, 1536, 5)])
def test_integer_dots_stay_within_the_activation_rounding_bound(isa, kind, n, k, m, digits):
    """Against the exact product of the dequantized weight: each block's activations are off
    by at most half their scale d_g, so |error| <= sum_g |scale_g| (d_g / 2) sum |q_g| (+ fp32)."""
    matrix = random_matrix(kind, n, k, seed=5)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(2))
    exact = x.double() @ matrix.dequantize().double().T
    codes, scales, _ = weight_codes(matrix)
    _, x_scales = kernels.quantize_activations(x, digits)
    bound = ((x_scales.double() / 2)[:, None] * (scales.abs() * codes.abs().sum(-1))[None]).sum(-1)  # [M, N]
    fp32 = 1e-5 * (x.double().abs() @ matrix.dequantize().double().abs().T)
    error = (matrix.matmul(x, x_digits=digits).double() - exact).abs()
    assert (error <= bound + fp32).all()
    assert error.max() > 0  # the activations really were rounded


def test_two_digits_are_about_a_hundred_times_closer_to_the_exact_product():
    matrix = random_matrix("int4", 256, 576, seed=8)
    x = torch.randn(4, 576, generator=torch.Generator().manual_seed(8))
    exact = x.double() @ matrix.dequantize().double().T
    one, two = ((matrix.matmul(x, x_digits=d).double() - exact).abs().mean() for d in (1, 2))
    assert two < one / 50


@pytest.mark.parametrize("digits", [1, 2])
@pytest.mark.parametrize("kind", ["int4", "int8"])
def test_integer_dots_of_many_rows_are_those_of_one_row_at_a_time(isa, kind, digits):
    """Many activation rows go through the weights in blocks that stay in L2 (at K = 8192: 24
    rows with one digit, 12 with two) and in tiles of several weight and activation rows; each
    output is still summed alone, so it is bit for bit what a one-row call gives, and matches
    the quantized activations' product (test above)."""
    matrix = random_matrix(kind, 70, 8192, seed=9, qparams_dtype=torch.float16)  # 70: a short last tile
    x = torch.randn(53, 8192, generator=torch.Generator().manual_seed(9))  # several blocks and a short one
    many = matrix.matmul(x, x_digits=digits)
    one_at_a_time = torch.cat([matrix.matmul(x[i:i + 1], x_digits=digits) for i in range(x.shape[0])])
    assert torch.equal(many, one_at_a_time)
    x_codes, x_scales = python_quantized(x, digits)
    codes, scales, offsets = weight_codes(matrix)
    dots = torch.einsum("mgk,ngk->mng", activation_values(x_codes).unflatten(-1, (-1, 32)), codes)
    want = (dots * scales[None] * x_scales.double()[:, None]).sum(-1) + x.double().unflatten(-1, (-1, 32)).sum(-1) @ offsets.T
    assert torch.allclose(many.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


@pytest.mark.parametrize("digits", [1, 2])
def test_integer_dots_agree_on_every_isa_and_thread_count(digits):
    matrix = random_matrix("int4", 333, 256, seed=2)
    x = torch.randn(5, 256)
    best, threads = kernels.isa(), torch.get_num_threads()
    outputs = {}
    try:
        for name in ISAS:
            kernels.set_isa(name)
            outputs[name] = matrix.matmul(x, x_digits=digits)
        torch.set_num_threads(1)
        one = matrix.matmul(x, x_digits=digits)
    finally:
        kernels.set_isa(best)
        torch.set_num_threads(threads)
    for name, out in outputs.items():
        assert torch.allclose(out, outputs["scalar"], rtol=1e-5, atol=1e-3), name
    assert torch.equal(one, outputs[best])


def test_integer_dots_take_bf16_activations_and_give_bf16():
    matrix = random_matrix("int8", 64, 128, seed=3)
    x = torch.randn(3, 128).to(torch.bfloat16)
    for digits in (1, 2):
        want = matrix.matmul(x.float(), x_digits=digits)
        assert torch.equal(matrix.matmul(x, x_digits=digits), want.to(torch.bfloat16))


def test_bad_activation_digits_are_refused():
    matrix = random_matrix("int8", 8, 64)
    with pytest.raises(ValueError, match=r"x_digits must be 0 \(exact\), 1 \(int8\) or 2"):
        matrix.matmul(torch.randn(1, 64), x_digits=3)
    with pytest.raises(ValueError, match="digits must be 1 or 2"):
        kernels.quantize_activations(torch.randn(1, 64), 0)


def test_bad_activations_for_quantization_are_refused():
    with pytest.raises(ValueError, match=r"float32 tensor \[M, K\], K a multiple of 32"):
        kernels.quantize_activations(torch.randn(2, 33))
    with pytest.raises(ValueError, match="float32"):
        kernels.quantize_activations(torch.randn(2, 64).double())


def test_join_rows_is_a_view_where_the_parts_lie_back_to_back():
    whole = torch.randn(10, 4)
    parts = [whole[0:3], whole[3:4], whole[4:10]]
    joined = join_rows(parts)
    assert joined.data_ptr() == whole.data_ptr() and torch.equal(joined, torch.cat(parts))
    whole[5, 1] = 7.0  # a view: it sees a later write to the parts' storage
    assert joined[5, 1].item() == 7.0


@pytest.mark.parametrize("case", ["gap", "other storage", "reordered", "other dtype", "other width"])
def test_join_rows_copies_anything_else(case):
    whole = torch.randn(10, 4)
    parts = {
        "gap": [whole[0:3], whole[4:6]],
        "other storage": [whole[0:3], whole[3:5].clone()],
        "reordered": [whole[3:5], whole[0:3]],
        "other dtype": [whole[0:3], whole[3:5].double()],
        "other width": [whole[0:3], torch.randn(2, 2)],
    }[case]
    if case == "other width":
        with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
            join_rows(parts)
        return
    joined = join_rows(parts)
    assert joined.data_ptr() != whole.data_ptr() and torch.equal(joined, torch.cat(parts))


def test_a_loaded_model_fuses_its_projections_without_copies(smollm2_auto_mcp):
    """q/k/v and gate/up of every layer are one matrix each, and with exact dots that matrix is
    a view of the file's mapping: loading the file `mcp2026 pull` compiles copies no weight.
    (The default integer dots re-lay them 16 rows at a time: test_interleaved_kernels.py.)"""
    from mcp.engine.engine import EngineOptions, NativeEngine
    from mcp.modelfile.reader import open_model

    with open_model(smollm2_auto_mcp) as model_file:
        model = NativeEngine(model_file, EngineOptions(device="cpu", decode_dots="exact")).model
        mapping = model_file.tensor("model.norm.weight").untyped_storage().data_ptr()
        q_codes = model_file.tensor("model.layers.3.self_attn.q_proj.weight")
    for layer in model.layers:
        for group in (layer.self_attn.qkv_proj, layer.mlp.gate_up_proj):
            (fused,) = group.parts
            for tensor in (fused.matrix.codes, fused.matrix.qparams):
                if tensor is not None:  # the GGUF block kinds keep their scales inside the codes
                    assert tensor.untyped_storage().data_ptr() == mapping
    fused = model.layers[3].self_attn.qkv_proj.parts[0].matrix
    assert fused.codes.data_ptr() == q_codes.data_ptr() and torch.equal(fused.codes[:576], q_codes)
