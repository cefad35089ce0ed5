"""The packed int4 format: exact from GGUF 4-bit blocks, and torch's byte order on every CPU layout."""

from __future__ import annotations

import subprocess
import sys

import gguf
import numpy as np
import pytest
import torch

from mcp.engine.quant import int4pack

PACK_CHECK = r"""
import sys, torch
from mcp.engine.quant import int4pack
layout = int4pack.torch_layout()
assert layout == sys.argv[1], (layout, sys.argv[1])
g = torch.Generator().manual_seed(0)
for n, k in ((64, 64), (576, 576), (192, 96), (1536, 576)):
    codes = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=g)
    theirs = torch._convert_weight_to_int4pack_for_cpu(codes, 1)
    ours = int4pack.pack(codes.to(torch.uint8), layout)
    assert torch.equal(ours, theirs), (n, k)
    assert torch.equal(int4pack.unpack(ours, layout), codes.to(torch.uint8)), (n, k)
print("ok")
"""


@pytest.mark.parametrize("layout", int4pack.TORCH_LAYOUTS)
def test_pack_reproduces_torch_for_each_cpu_capability(layout):
    env = {"ATEN_CPU_CAPABILITY": layout, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", PACK_CHECK, layout], env=env, capture_output=True, text=True)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_repack_between_layouts_keeps_codes():
    codes = torch.randint(0, 16, (128, 64), dtype=torch.uint8)
    for stored in int4pack.LAYOUTS:
        for wanted in int4pack.LAYOUTS:
            moved = int4pack.repack(int4pack.pack(codes, stored), stored, wanted)
            assert torch.equal(int4pack.unpack(moved, wanted), codes)


def test_rows_layout_is_the_gguf_nibble_order(smollm2_gguf):
    """The native kernels' layout holds a Q4_1 tensor's nibble bytes exactly as the GGUF does."""
    reader = gguf.GGUFReader(smollm2_gguf)
    tensor = next(t for t in reader.tensors if t.name == "blk.0.ffn_down.weight")
    rows, cols = int(tensor.shape[1]), int(tensor.shape[0])
    blocks = torch.from_numpy(np.array(tensor.data)).reshape(rows, cols // 32, 20)
    codes, _ = int4pack.codes_from_blocks(blocks.reshape(rows, -1), "q4_1", (rows, cols))
    packed = int4pack.pack(codes, "rows")
    assert torch.equal(packed.reshape(rows, cols // 32, 16), blocks[..., 4:])


def random_blocks(qtype, rows: int, cols: int, seed: int) -> np.ndarray:
    """Random block bytes with finite fp16 scale fields."""
    rng = np.random.default_rng(seed)
    block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows, cols // block, nbytes), dtype=np.uint8)
    for offset in (0, 2) if qtype != gguf.GGMLQuantizationType.Q4_0 else (0,):
        blocks[..., offset:offset + 2] = rng.uniform(-2, 2, blocks.shape[:2]).astype(np.float16)[..., None].view(np.uint8)
    return blocks.reshape(rows, -1)


@pytest.mark.parametrize("encoding", int4pack.INT4_SOURCES)
def test_int4_from_gguf_blocks_is_bit_exact(encoding):
    qtype = gguf.GGMLQuantizationType[encoding.upper()]
    rows, cols = 128, 512
    blocks = random_blocks(qtype, rows, cols, seed=3)
    codes, scale_offset = int4pack.codes_from_blocks(torch.from_numpy(blocks), encoding, (rows, cols))
    ours = int4pack.dequantize_int4(codes, scale_offset).numpy()
    theirs = gguf.quants.dequantize(blocks, qtype).reshape(rows, cols)
    assert np.array_equal(ours, theirs)  # equal fp32 values (Q4_0 may give +0 where ggml gives -0)
    if encoding != "q4_0":
        assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32))  # and the same bits


def test_real_q4_1_tensors_are_bit_exact(smollm2_gguf):
    reader = gguf.GGUFReader(smollm2_gguf)
    checked = 0
    for tensor in reader.tensors:
        if tensor.tensor_type != gguf.GGMLQuantizationType.Q4_1 or checked >= 12:
            continue
        rows, cols = int(tensor.shape[1]), int(tensor.shape[0])
        blocks = torch.from_numpy(np.array(tensor.data)).reshape(rows, -1)
        codes, scale_offset = int4pack.codes_from_blocks(blocks, "q4_1", (rows, cols))
        ours = int4pack.dequantize_int4(codes, scale_offset).numpy()
        theirs = gguf.quants.dequantize(np.array(tensor.data), tensor.tensor_type).reshape(rows, cols)
        assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), tensor.name
        checked += 1
    assert checked == 12


def test_kernel_computes_the_format_within_bf16_rounding():
    rows, cols = 256, 512
    blocks = random_blocks(gguf.GGMLQuantizationType.Q4_1, rows, cols, seed=5)
    codes, scale_offset = int4pack.codes_from_blocks(torch.from_numpy(blocks), "q4_1", (rows, cols))
    weight = int4pack.dequantize_int4(codes, scale_offset)
    packed = int4pack.pack(codes, int4pack.torch_layout())
    x = torch.randn(3, cols)
    for dtype, tolerance in ((torch.float32, 1e-4), (torch.bfloat16, 3e-2)):
        sz = int4pack.kernel_scale_and_zero(scale_offset, dtype)
        got = torch._weight_int4pack_mm_for_cpu(x.to(dtype), packed, int4pack.GROUP_SIZE, sz).float()
        want = x @ weight.T
        assert torch.allclose(got, want, rtol=tolerance, atol=tolerance * want.abs().max().item()), dtype
