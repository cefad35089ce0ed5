"""Prefill on the packed weights: tiles dequantized in turn, no dense copy of a matrix held.

Calls of more rows than ``decode_max_rows`` run a GEMM in ``prefill_dtype``; it used to
dequantize each whole matrix per call (a full dense copy at a time, and a whole-model one
with ``cache_prefill_weights``). It now dequantizes ``prefill_tile_rows`` rows at a time into
one small buffer; the values and the GEMM dtype are the same, so the results are those of a
GEMM on the whole dequantized weight.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from mcp.engine import kernels
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.layers import linear
from mcp.engine.layers.linear import Int4Linear, Int8Linear, NativeLinear, PackedLinear, prefill_tile_rows
from mcp.engine.quant import int4pack, int8
from mcp.modelfile.reader import open_model

K = 2048  # with 1 MB tiles: fp32 tiles of 128 rows, bf16 ones of 256
N = 704  # several whole tiles and a short last one in either dtype


@pytest.fixture(autouse=True)
def small_tiles(monkeypatch):
    """1 MB tiles, so that matrices of a test's size span several (the default is larger)."""
    monkeypatch.setattr(linear, "PREFILL_TILE_BYTES", 1 << 20)


def _codes_and_params(n: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (n, k), generator=generator, dtype=torch.uint8)
    scale_offset = torch.stack((torch.rand(n, k // 32, generator=generator) * 0.02,
                                torch.randn(n, k // 32, generator=generator) * 0.05), dim=-1)
    return codes, scale_offset


def _native_int4(dtype: torch.dtype, n: int = N, k: int = K) -> NativeLinear:
    codes, scale_offset = _codes_and_params(n, k, 1)
    matrix = kernels.QuantMatrix("int4", int4pack.pack(codes, "rows"), scale_offset.to(torch.float16))
    return NativeLinear(matrix, None, prefill_dtype=dtype, cache_dense=False, decode_max_rows=16)


def _native_int8(dtype: torch.dtype) -> NativeLinear:
    generator = torch.Generator().manual_seed(2)
    codes = torch.randint(-127, 128, (N, K), generator=generator, dtype=torch.int8)
    scales = (torch.rand(N, K // 32, generator=generator) * 1e-3).to(torch.float16)
    return NativeLinear(kernels.QuantMatrix("int8", codes, scales), None, prefill_dtype=dtype, cache_dense=False,
                        decode_max_rows=16)


def _torch_int4(dtype: torch.dtype) -> Int4Linear:
    codes, scale_offset = _codes_and_params(N, K, 3)
    layout = int4pack.torch_layout()
    return Int4Linear(int4pack.pack(codes, layout), int4pack.kernel_scale_and_zero(scale_offset, torch.bfloat16),
                      layout, None, prefill_dtype=dtype, cache_dense=False, decode_max_rows=16)


def _torch_int8(dtype: torch.dtype) -> Int8Linear:
    codes, scales = int8.quantize(torch.randn(N, K, generator=torch.Generator().manual_seed(4)) * 0.05)
    return Int8Linear(codes, scales, None, prefill_dtype=dtype, cache_dense=False, decode_max_rows=16)


def _whole_weight(layer: PackedLinear) -> torch.Tensor:
    """The weight as the former prefill path dequantized it: the whole matrix at once."""
    if isinstance(layer, NativeLinear):
        return layer.matrix.dequantize(layer.prefill_dtype)
    elif isinstance(layer, Int4Linear):
        values = int4pack.dequantize_kernel_form(layer.packed, layer._layout, layer.scale_and_zero)
    else:
        values = int8.dequantize(layer.codes, layer.scales)
    return values.to(layer.prefill_dtype)


LAYERS = {"native-int4": _native_int4, "native-int8": _native_int8, "torch-int4": _torch_int4,
          "torch-int8": _torch_int8}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("kind", LAYERS)
def test_tiled_prefill_equals_a_gemm_on_the_whole_dequantized_weight(kind, dtype):
    if kind.startswith("native") and not kernels.available():
        pytest.skip("native kernels not built: pip install -e . compiles them (make test does)")
    layer = LAYERS[kind](dtype)
    assert N % prefill_tile_rows(K, dtype) != 0 and N > 2 * prefill_tile_rows(K, dtype)  # several tiles and a short one
    weight = _whole_weight(layer)
    assert torch.equal(layer.dense_weight(), weight)  # tile by tile, the same values
    x = torch.randn(1, 40, K, generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        got = layer(x)
        want = F.linear(x.to(dtype), weight).to(x.dtype)
    assert got.shape == (1, 40, N) and got.dtype == torch.float32
    # the same products in the same dtype; a GEMM's blocking may still sum in another order
    tolerance = 1e-5 if dtype == torch.float32 else 1e-2
    assert torch.allclose(got, want, rtol=tolerance, atol=tolerance * want.abs().max().item())


class _LargestTensor(TorchDispatchMode):
    """Records the most elements of any tensor an operation returns (every allocation)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for value in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() != 0:
                self.largest = max(self.largest, value.numel())
        return out


@pytest.mark.skipif(not kernels.available(), reason="native kernels not built: pip install -e . compiles them (make test does)")
def test_prefill_never_holds_the_whole_matrix_dense():
    layer = _native_int4(torch.float32, n=4096)  # 8M weights, 32 tiles of 128 rows
    x = torch.randn(24, K)
    with torch.inference_mode(), _LargestTensor() as seen:
        layer(x)
    # the output (24 x 4096) and one tile (128 x 2048) are the largest things made, not W (4096 x 2048)
    assert seen.largest == prefill_tile_rows(K, torch.float32) * K
    assert layer.prefill_cache is None


def test_a_cached_dense_weight_is_opt_in_and_counted(smollm2_mcp):
    with open_model(smollm2_mcp) as model_file:
        lean = NativeEngine(model_file, EngineOptions(device="cpu"))
        cached = NativeEngine(model_file, EngineOptions(device="cpu", cache_prefill_weights=True))
    packed = [m for m in lean.model.modules() if isinstance(m, PackedLinear)]
    assert packed and all(m.prefill_cache is None for m in packed)
    assert lean.weight_memory().prefill_cache_bytes == 0
    copies = sum(m.out_features * m.in_features * m.prefill_dtype.itemsize for m in packed)
    memory = cached.weight_memory()
    assert memory.prefill_cache_bytes == copies
    assert memory.weight_bytes == lean.weight_memory().weight_bytes + copies
    assert "no dense copy" in "\n".join(lean.plan.describe())
    assert "cached dense copies" in "\n".join(cached.plan.describe())
    # a prompt over both limits prefills on the tiles and on the cached copies alike
    ids = list(range(100, 100 + 200))
    with torch.inference_mode():
        want = contiguous_decoder(cached).score(ids)
        got = contiguous_decoder(lean).score(ids)
    tolerance = 1e-4 if "prefill dense-fp32" in "\n".join(lean.plan.describe()) else 2e-2
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    assert torch.allclose(got, want, rtol=tolerance, atol=tolerance * want.abs().max().item())
