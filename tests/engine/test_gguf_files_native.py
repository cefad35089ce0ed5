"""Files as llama.cpp's quantizer writes them run every matrix in the native step, exactly.

A tiny random-weight Llama (2 layers, tied embeddings) is written as F16 with the ``gguf``
package and quantized by llama.cpp's own quantizer (``llama_cpp.llama_model_quantize``) to
each common type: Q4_K_M and Q5_K_M mix Q4_K/Q5_K with Q6_K (the tied head, and the second
layer's v and down rows), Q4_0 and Q5_0 have a Q6_K head. Compiled with the default settings,
every matrix, the head included, must plan a native kernel and the decode step must be the
native one; its greedy tokens and logits must be those of the same file compiled to fp32
(``gguf.quants``' values) and run by the torch modules.
"""

from __future__ import annotations

import ctypes

import gguf
import numpy as np
import pytest
import torch
from test_kquant_model import FFN, HEAD_DIM, HIDDEN, KV_HEADS, finish_gguf, start_gguf
from test_native_step import generate

from mcp.compiler.compiler import compile_model
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kernels import INTERLEAVED_KINDS
from mcp.engine.layers.linear import NativeLinear
from mcp.engine.lean import LeanModel
from mcp.engine.precision import NATIVE_KERNELS
from mcp.engine.runner import ModelRunner, allocate_storage
from mcp.modelfile.reader import open_model

llama_cpp = pytest.importorskip("llama_cpp", reason="install llama-cpp-python (make test installs it)")

LAYERS, BLOCK = 2, 16
PROMPTS = [[3, 1, 4, 1, 5, 9, 2, 6, 5, 3], [2, 7, 1, 8], [11]]
TABLES = [[4, 1], [0, 6], [3, 2]]
# What each block type runs as with integer dots (re-laid 16 rows at a time; Q8_0 is the int8 kind).
INTERLEAVED_OF = {source.replace("int8", "q8_0"): kind for kind, source in INTERLEAVED_KINDS.items()}
FILE_TYPES = {  # name -> (llama.cpp file type, the block types its matrices must hold)
    "Q4_K_M": ("LLAMA_FTYPE_MOSTLY_Q4_K_M", {"q4_k", "q6_k"}),
    "Q5_K_M": ("LLAMA_FTYPE_MOSTLY_Q5_K_M", {"q5_k", "q6_k"}),
    "Q6_K": ("LLAMA_FTYPE_MOSTLY_Q6_K", {"q6_k"}),
    "Q4_0": ("LLAMA_FTYPE_MOSTLY_Q4_0", {"q4_0", "q6_k"}),
    "Q5_0": ("LLAMA_FTYPE_MOSTLY_Q5_0", {"q5_0", "q6_k"}),
    "Q5_1": ("LLAMA_FTYPE_MOSTLY_Q5_1", {"q5_1", "q6_k"}),
    "Q8_0": ("LLAMA_FTYPE_MOSTLY_Q8_0", {"q8_0"}),
}


@pytest.fixture(scope="module")
def f16_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny-f16.gguf"
    rng = np.random.default_rng(0)
    writer = start_gguf(path, LAYERS)
    vocab = 16
    shapes = {"token_embd.weight": (vocab, HIDDEN)}
    for i in range(LAYERS):
        shapes |= {f"blk.{i}.attn_q.weight": (HIDDEN, HIDDEN), f"blk.{i}.attn_k.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
                   f"blk.{i}.attn_v.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
                   f"blk.{i}.attn_output.weight": (HIDDEN, HIDDEN), f"blk.{i}.ffn_gate.weight": (FFN, HIDDEN),
                   f"blk.{i}.ffn_up.weight": (FFN, HIDDEN), f"blk.{i}.ffn_down.weight": (HIDDEN, FFN)}
    for name, shape in shapes.items():
        writer.add_tensor(name, rng.normal(0, 0.08, shape).astype(np.float16))
    for name in ["output_norm.weight"] + [f"blk.{i}.{n}_norm.weight" for i in range(LAYERS) for n in ("attn", "ffn")]:
        writer.add_tensor(name, rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32))
    finish_gguf(writer)
    return path


def quantize(source, target, file_type: str) -> None:
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, file_type)
    params.nthread = 1
    assert llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params)) == 0


def load(path, precision: str = "auto", decode_dots: str = "auto") -> NativeEngine:
    with open_model(path) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision=precision, decode_dots=decode_dots))


def runner(engine: NativeEngine, native_step: bool) -> ModelRunner:
    arch = engine.model.arch
    budget = 8 * 2 * arch.num_layers * BLOCK * arch.num_kv_heads * arch.head_dim * 4
    return ModelRunner(engine.model, allocate_storage(engine.model, budget, BLOCK, torch.float32),
                       native_step=native_step)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FILE_TYPES))
def test_a_quantized_file_runs_every_matrix_natively_with_the_reference_tokens(f16_gguf, tmp_path, name):
    file_type, block_types = FILE_TYPES[name]
    quantized = tmp_path / f"tiny-{name}.gguf"
    quantize(f16_gguf, quantized, file_type)
    types = {t.tensor_type.name.lower() for t in gguf.GGUFReader(quantized).tensors if len(t.shape) == 2}
    assert types == block_types
    compile_model(quantized, tmp_path / "auto.mcp")
    compile_model(quantized, tmp_path / "fp32.mcp", precision="fp32")
    engine, reference = load(tmp_path / "auto.mcp", decode_dots="exact"), load(tmp_path / "fp32.mcp", "fp32")
    decode_kernels = {p.decode for p in engine.plan.by_tensor.values()}
    assert decode_kernels <= set(NATIVE_KERNELS) and engine.plan.decode_step == "native", engine.plan.describe()
    assert not any("dense" in line.split("prefill")[0] for line in engine.plan.describe()[4:])
    ours, theirs = runner(engine, native_step=True), runner(reference, native_step=False)
    assert ours.native_step is not None
    got_tokens, got_logits = generate(ours, PROMPTS, TABLES, steps=6)
    want_tokens, want_logits = generate(theirs, PROMPTS, TABLES, steps=6)
    assert got_tokens == want_tokens
    for got, want in zip(got_logits, want_logits):
        assert want.abs().max() > 1e-2  # the random model says something
        assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    prompt = got_tokens[0]
    lean = LeanModel(tmp_path / "auto.mcp", num_threads=2)._forward(prompt, 0)
    want = contiguous_decoder(reference).score(prompt)[-1]
    assert np.abs(lean - want.numpy()).max() <= 1e-4 * want.abs().max().item()
    # The default dots (int8x2 where the kernels have SIMD): the 4-bit, Q6_K and Q8_0 matrices
    # re-laid 16 rows at a time, the same greedy tokens, logits within the activations' rounding.
    default = load(tmp_path / "auto.mcp")
    if default.plan.decode_dots == "int8x2":
        kinds = {p.matrix.kind for p in default.model.modules() if isinstance(p, NativeLinear)}
        assert kinds == {INTERLEAVED_OF.get(kind, kind) for kind in block_types}, kinds
    tokens, logits = generate(runner(default, native_step=True), PROMPTS, TABLES, steps=6)
    assert tokens == want_tokens
    for got, want in zip(logits, want_logits):
        assert (got - want).abs().max() <= 2e-3 * want.abs().max()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Q4_K_M", "Q4_0"])
def test_a_4_bit_file_compiles_to_its_own_blocks_and_no_more_bytes(f16_gguf, tmp_path, name):
    """The default compile keeps Q4_0/Q4_1/Q4_K blocks as stored (no int4 codes beside f32 or
    f16 scale/offset and a bf16 copy for the torch kernel): the .mcp's tensors hold the GGUF's
    bytes, and the plan runs them with the block kernels."""
    quantized = tmp_path / f"tiny-{name}.gguf"
    quantize(f16_gguf, quantized, FILE_TYPES[name][0])
    compile_model(quantized, tmp_path / "auto.mcp")
    gguf_bytes = sum(int(t.n_bytes) for t in gguf.GGUFReader(quantized).tensors)
    with open_model(tmp_path / "auto.mcp") as model_file:
        specs = model_file.header.tensors
        mcp_bytes = sum(model_file.tensor(spec.name).numel() * model_file.tensor(spec.name).element_size()
                        for spec in specs)
        assert not any(spec.name.endswith((".qparams", ".scale_zero")) for spec in specs)
    assert mcp_bytes <= gguf_bytes * 1.01, (mcp_bytes, gguf_bytes)
    engine = load(tmp_path / "auto.mcp")
    four_bit = {p.decode for n, p in engine.plan.by_tensor.items() if "mlp" in n or "self_attn" in n} - {"mcp-q6_k"}
    assert four_bit == {f"mcp-{name[:4].lower()}"}, engine.plan.describe()
