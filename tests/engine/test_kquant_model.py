"""A model whose weights are Q4_K, Q5_K and Q6_K blocks, end to end against transformers.

No small real K-quant Llama GGUF ships on PyPI, so the test writes one: random weights
quantized by filling K-quant blocks with random codes and small fp16 scales, Q/K rows in
llama.cpp's permuted order. transformers loads that GGUF (its own dequantizer and Q/K
un-permutation); we compile it to .mcp (blocks kept) and must produce the same logits.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch

from mcp.compiler.compiler import compile_model
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import BLOCK_ENCODINGS

QType = gguf.GGMLQuantizationType
HIDDEN, FFN, HEADS, KV_HEADS, VOCAB = 256, 512, 4, 2, 16
HEAD_DIM = HIDDEN // HEADS
SCALE_FIELDS = {QType.Q4_K: (0, 2), QType.Q5_K: (0, 2), QType.Q6_K: (208,)}  # fp16 d / dmin offsets


def k_blocks(qtype: QType, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Random K-quant blocks [rows, row_bytes] whose values stay around ±0.05."""
    _, nbytes = BLOCK_ENCODINGS[qtype.name.lower()]
    blocks = rng.integers(0, 256, size=(rows, cols // 256, nbytes), dtype=np.uint8)
    for offset in SCALE_FIELDS[qtype]:
        scale = rng.uniform(1e-4, 1e-3, size=(rows, cols // 256)).astype(np.float16)
        blocks[:, :, offset:offset + 2] = scale.view(np.uint8).reshape(rows, cols // 256, 2)
    return blocks.reshape(rows, -1)


def llama_cpp_permute(rows: np.ndarray, num_heads: int) -> np.ndarray:
    """llama.cpp's converter order for Q/K rows (the inverse of what the compiler undoes)."""
    return rows.reshape(num_heads, 2, rows.shape[0] // num_heads // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def start_gguf(path, layers: int) -> gguf.GGUFWriter:
    """A GGUF writer with a tiny Llama's metadata and a byte-less tokenizer of VOCAB tokens."""
    writer = gguf.GGUFWriter(path, "llama")
    for add, value in ((writer.add_block_count, layers), (writer.add_context_length, 128),
                       (writer.add_embedding_length, HIDDEN), (writer.add_feed_forward_length, FFN),
                       (writer.add_head_count, HEADS), (writer.add_head_count_kv, KV_HEADS),
                       (writer.add_layer_norm_rms_eps, 1e-5), (writer.add_rope_freq_base, 10000.0)):
        add(value)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])
    writer.add_token_types([int(gguf.TokenType.NORMAL)] * VOCAB)
    writer.add_token_merges([])
    writer.add_eos_token_id(0)
    return writer


def finish_gguf(writer: gguf.GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_kquant_gguf(path, rng) -> None:
    writer = start_gguf(path, 1)
    matrices = {
        "token_embd.weight": (VOCAB, HIDDEN, QType.Q6_K), "output.weight": (VOCAB, HIDDEN, QType.Q6_K),
        "blk.0.attn_q.weight": (HIDDEN, HIDDEN, QType.Q4_K), "blk.0.attn_k.weight": (KV_HEADS * HEAD_DIM, HIDDEN, QType.Q5_K),
        "blk.0.attn_v.weight": (KV_HEADS * HEAD_DIM, HIDDEN, QType.Q6_K), "blk.0.attn_output.weight": (HIDDEN, HIDDEN, QType.Q4_K),
        "blk.0.ffn_gate.weight": (FFN, HIDDEN, QType.Q4_K), "blk.0.ffn_up.weight": (FFN, HIDDEN, QType.Q5_K),
        "blk.0.ffn_down.weight": (HIDDEN, FFN, QType.Q6_K),
    }
    for name, (rows, cols, qtype) in matrices.items():
        blocks = k_blocks(qtype, rows, cols, rng)
        if name.endswith(("attn_q.weight", "attn_k.weight")):
            blocks = llama_cpp_permute(blocks, HEADS if "attn_q" in name else KV_HEADS)
        writer.add_tensor(name, blocks, raw_shape=blocks.shape, raw_dtype=qtype)
    for name in ("output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight"):
        writer.add_tensor(name, rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32))
    finish_gguf(writer)


@pytest.mark.slow
def test_kquant_model_matches_transformers(tmp_path):
    from transformers import AutoModelForCausalLM

    write_kquant_gguf(tmp_path / "kquant.gguf", np.random.default_rng(0))
    header = compile_model(tmp_path / "kquant.gguf", tmp_path / "kquant.mcp", precision="source")
    assert {s.encoding for s in header.tensors} == {"q4_k", "q5_k", "q6_k", "f32"}
    with open_model(tmp_path / "kquant.mcp", verify=True) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))
    hf_model = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file="kquant.gguf", dtype=torch.float32).eval()
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([ids])).logits[0].float()
    ours = contiguous_decoder(engine).score(ids)
    assert theirs.abs().max() > 1e-3  # the random model says something
    assert torch.mean((ours - theirs) ** 2).item() < 1e-10
