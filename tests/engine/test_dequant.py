"""GGUF block dequantizers against gguf-py's numpy reference, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFReader, quants

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.engine.quant import dequant, dequantize
from mcp.modelfile.spec import BLOCK_ENCODINGS

# Byte offsets of the fp16 fields inside one block of each encoding.
FP16_FIELDS = {"q4_0": (0,), "q4_1": (0, 2), "q5_0": (0,), "q5_1": (0, 2), "q8_0": (0,), "q4_k": (0, 2), "q5_k": (0, 2), "q6_k": (208,)}
GGML_TYPE = {name: GGMLQuantizationType[name.upper()] for name in BLOCK_ENCODINGS}


def random_finite_fp16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random fp16 bit patterns over the whole finite range (subnormals, zeros, both signs)."""
    bits = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    inf_or_nan = (bits & 0x7C00) == 0x7C00
    bits[inf_or_nan] &= np.uint16(0xBFFF)  # clear the exponent's top bit
    return bits


def random_blocks(encoding: str, rows: int, num_blocks: int, seed: int) -> np.ndarray:
    """uint8 [rows, num_blocks * block_bytes] of random blocks with finite fp16 scales."""
    rng = np.random.default_rng(seed)
    block_bytes = BLOCK_ENCODINGS[encoding][1]
    raw = rng.integers(0, 256, (rows, num_blocks, block_bytes), dtype=np.uint8)
    for offset in FP16_FIELDS[encoding]:
        halves = random_finite_fp16(rng, (rows, num_blocks))
        raw[:, :, offset : offset + 2] = halves.view(np.uint8).reshape(rows, num_blocks, 2)
    return raw.reshape(rows, num_blocks * block_bytes)


def assert_bits_equal(got: torch.Tensor, want: np.ndarray) -> None:
    assert got.dtype == torch.float32
    assert tuple(got.shape) == want.shape
    assert np.isfinite(want).all()
    mismatched = got.numpy().view(np.int32) != want.astype(np.float32).view(np.int32)
    assert not mismatched.any(), f"{int(mismatched.sum())} of {want.size} values differ"


@pytest.mark.parametrize("encoding", sorted(BLOCK_ENCODINGS))
@pytest.mark.parametrize(("rows", "num_blocks"), [(1, 1), (3, 2), (17, 5), (64, 9)])
def test_random_blocks_match_reference(encoding: str, rows: int, num_blocks: int) -> None:
    raw = random_blocks(encoding, rows, num_blocks, seed=rows * 100 + num_blocks)
    want = quants.dequantize(raw, GGML_TYPE[encoding])
    width = num_blocks * BLOCK_ENCODINGS[encoding][0]
    got = dequantize(torch.from_numpy(raw), encoding, (rows, width))
    assert_bits_equal(got, want)


@pytest.mark.parametrize("encoding", sorted(BLOCK_ENCODINGS))
def test_chunked_rows_match_reference(encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dequant, "CHUNK_WEIGHTS", 700)  # a few rows per chunk, a ragged last chunk
    raw = random_blocks(encoding, 23, 3, seed=7)
    got = dequantize(torch.from_numpy(raw), encoding, (23, 3 * BLOCK_ENCODINGS[encoding][0]))
    assert_bits_equal(got, quants.dequantize(raw, GGML_TYPE[encoding]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_output_dtype_is_fp32_result_cast(dtype: torch.dtype) -> None:
    raw = random_blocks("q4_k", 4, 2, seed=3)
    raw[:, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)  # keep within fp16 range
    raw[:, 2:4] = np.frombuffer(np.float16(0.02).tobytes(), np.uint8)
    want = torch.from_numpy(quants.dequantize(raw, GGMLQuantizationType.Q4_K)).to(dtype)
    got = dequantize(torch.from_numpy(raw), "q4_k", (4, 512), dtype)
    assert got.dtype == dtype
    assert torch.equal(got, want)


def test_logical_shape_of_more_than_two_dims() -> None:
    raw = random_blocks("q8_0", 6, 2, seed=11)  # logical [2, 3, 64] -> rows = 6
    got = dequantize(torch.from_numpy(raw), "q8_0", (2, 3, 64))
    want = quants.dequantize(raw, GGMLQuantizationType.Q8_0).reshape(2, 3, 64)
    assert_bits_equal(got, want)


def test_read_only_memory_map_is_left_untouched(tmp_path) -> None:
    raw = random_blocks("q6_k", 5, 2, seed=5)
    path = tmp_path / "blocks.bin"
    raw.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r", shape=raw.shape)
    got = dequantize(mapped, "q6_k", (5, 512))
    assert_bits_equal(got, quants.dequantize(raw, GGMLQuantizationType.Q6_K))
    assert path.read_bytes() == raw.tobytes()


@pytest.mark.parametrize(
    ("encoding", "stored"), [("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)]
)
def test_dense_passthrough_from_own_dtype_and_raw_bytes(encoding: str, stored: torch.dtype) -> None:
    values = torch.linspace(-3, 3, 24).to(stored).reshape(4, 6)
    as_bytes = values.reshape(-1).view(torch.uint8).reshape(4, -1)
    for blocks in (values, as_bytes):
        got = dequantize(blocks, encoding, (4, 6))
        assert got.dtype == torch.float32
        assert torch.equal(got, values.float())
    assert dequantize(values, encoding, (2, 12), torch.bfloat16).dtype == torch.bfloat16
    same = dequantize(values, encoding, (4, 6), stored)
    assert torch.equal(same, values) and same.data_ptr() != values.data_ptr()  # a copy, never an alias


def test_unknown_encoding_is_unsupported() -> None:
    message = r"tensor encoding 'q3_k' is not supported; supported: f32, f16, bf16, q4_0, "
    with pytest.raises(UnsupportedModelError, match=message):
        dequantize(torch.zeros(1, 110, dtype=torch.uint8), "q3_k", (1, 256))


def test_wrong_stored_shape_is_a_format_error() -> None:
    with pytest.raises(
        ModelFormatError,
        match=r"q4_1 tensor of shape \(2, 64\) must be stored as uint8 \(2, 40\), got uint8 \(2, 20\)",
    ):
        dequantize(torch.zeros(2, 20, dtype=torch.uint8), "q4_1", (2, 64))
    with pytest.raises(ModelFormatError, match="is not a multiple of q4_0's block 32"):
        dequantize(torch.zeros(2, 18, dtype=torch.uint8), "q4_0", (2, 33))
    with pytest.raises(ModelFormatError, match=r"must be stored as uint8 \(1, 34\), got int8 \(1, 34\)"):
        dequantize(torch.zeros(1, 34, dtype=torch.int8), "q8_0", (1, 32))


def test_dense_with_wrong_size_is_a_format_error() -> None:
    message = r"f32 tensor of shape \(3, 3\) cannot be read from float32 data of 8 elements"
    with pytest.raises(ModelFormatError, match=message):
        dequantize(torch.zeros(8), "f32", (3, 3))


def test_real_model_tensors_match_reference(smollm2_gguf) -> None:
    reader = GGUFReader(smollm2_gguf)
    seen = set()
    for tensor in reader.tensors:
        encoding = tensor.tensor_type.name.lower()
        shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists dims innermost first
        got = dequantize(tensor.data, encoding, shape)
        assert_bits_equal(got, quants.dequantize(tensor.data, tensor.tensor_type).reshape(shape))
        seen.add(encoding)
    assert seen == {"q4_1", "q8_0", "f32"}


@pytest.mark.cuda
@pytest.mark.parametrize("encoding", sorted(BLOCK_ENCODINGS))
def test_cuda_matches_reference(encoding: str) -> None:
    raw = random_blocks(encoding, 33, 4, seed=13)
    got = dequantize(torch.from_numpy(raw).cuda(), encoding, (33, 4 * BLOCK_ENCODINGS[encoding][0]))
    assert got.device.type == "cuda"
    assert_bits_equal(got.cpu(), quants.dequantize(raw, GGML_TYPE[encoding]))
