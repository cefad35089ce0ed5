"""Compile GGUF files: the real SmolLM2 file against transformers, and tiny hand-written GGUFs."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as QType
from gguf.quants import dequantize, quantize

from mcp.base.errors import ConfigError, ModelFormatError, UnsupportedModelError
from mcp.compiler import catalog
from mcp.compiler.compiler import compile_model
from mcp.compiler.gguf_tokenizer import tokenizer_spec_from_gguf
from mcp.modelfile.inspect import describe
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import RopeScaling


def raises(kind: type[Exception], text: str):
    """``pytest.raises`` expecting ``text`` literally in the message."""
    return pytest.raises(kind, match=re.escape(text))


Q_NAME = "model.layers.{}.self_attn.q_proj.weight"
K_NAME = "model.layers.{}.self_attn.k_proj.weight"


def llama_cpp_permute(rows: np.ndarray, num_heads: int) -> np.ndarray:
    """What llama.cpp's converter does to HF Q/K rows (convert_hf_to_gguf.py's permute)."""
    split = rows.reshape(num_heads, 2, rows.shape[0] // num_heads // 2, *rows.shape[1:])
    return split.swapaxes(1, 2).reshape(rows.shape)


def _dequantized(model, name: str) -> torch.Tensor:
    spec = model.header.tensor(name)
    values = dequantize(model.tensor(name).numpy(), QType[spec.encoding.upper()])
    return torch.from_numpy(values.reshape(spec.shape))


@pytest.fixture(scope="module")
def smollm2(smollm2_mcp: Path):
    with open_model(smollm2_mcp) as model:
        yield model


@pytest.fixture(scope="module")
def gguf_reader(smollm2_gguf: Path) -> gguf.GGUFReader:
    return gguf.GGUFReader(smollm2_gguf)


def test_smollm2_tensor_inventory(smollm2) -> None:
    encodings = {spec.name: spec.encoding for spec in smollm2.header.tensors}
    assert len(encodings) == 272
    assert encodings["model.embed_tokens.weight"] == "q8_0"
    assert Counter(encodings.values()) == {"q4_1": 210, "f32": 61, "q8_0": 1}
    assert "lm_head.weight" not in encodings and "model.rope_freqs" not in encodings
    assert all(encodings[f"model.layers.{i}.mlp.down_proj.weight"] == "q4_1" for i in range(30))
    assert smollm2.header.tensor(K_NAME.format(0)).shape == (192, 576)
    assert smollm2.tensor(K_NAME.format(0)).shape == (192, 576 // 32 * 20)
    assert smollm2.header.tensor("model.layers.0.mlp.down_proj.weight").shape == (576, 1536)


def test_smollm2_architecture(smollm2) -> None:
    arch = smollm2.header.architecture
    assert (arch.architecture, arch.variant) == ("llama", "llama")
    assert (arch.num_layers, arch.hidden_size, arch.intermediate_size) == (30, 576, 1536)
    assert (arch.num_attention_heads, arch.num_kv_heads, arch.head_dim) == (9, 3, 64)
    assert (arch.rope_theta, arch.vocab_size, arch.max_position_embeddings) == (100000.0, 49152, 8192)
    assert arch.rms_norm_eps == pytest.approx(1e-5)
    assert arch.tie_word_embeddings is True and arch.attention_bias is False
    assert arch.rope_scaling is None


def test_smollm2_header_and_lineage(smollm2, gguf_reader) -> None:
    header = smollm2.header
    assert header.name == catalog.DEFAULT_MODEL
    assert header.precision_plan.default == "auto"
    lineage = header.lineage
    assert lineage.source_name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert lineage.source_sha256 == catalog.CATALOG[catalog.DEFAULT_MODEL].gguf_sha256
    assert lineage.source_format == "gguf"
    assert lineage.compiler_version == version("mcp2026")
    assert lineage.recipe == {"precision": "source", "qk_layout": "unpermuted", "source_architecture": "llama"}
    assert lineage.license == "apache-2.0"  # general.license
    assert lineage.base_model == "Smollm2 135M 8k Lc100K Mix1 Ep2"
    created = datetime.fromisoformat(lineage.created_at)
    assert created.tzinfo == timezone.utc and abs((datetime.now(timezone.utc) - created).days) < 1
    assert header.tokenizer == tokenizer_spec_from_gguf(gguf_reader)
    assert header.tokenizer.eos_token == "<|im_end|>"


def test_smollm2_blocks_are_the_gguf_bytes(smollm2, gguf_reader) -> None:
    source = {t.name: t.data for t in gguf_reader.tensors}
    pairs = {
        "token_embd.weight": "model.embed_tokens.weight",
        "blk.0.attn_v.weight": "model.layers.0.self_attn.v_proj.weight",
        "blk.29.ffn_down.weight": "model.layers.29.mlp.down_proj.weight",
        "blk.7.ffn_norm.weight": "model.layers.7.post_attention_layernorm.weight",
        "output_norm.weight": "model.norm.weight",
    }
    for gguf_name, name in pairs.items():
        assert np.array_equal(smollm2.tensor(name).numpy(), source[gguf_name]), name
    for layer in (0, 29):  # Q/K rows are un-permuted; permuting them again gives the GGUF bytes
        q, k = smollm2.tensor(Q_NAME.format(layer)).numpy(), smollm2.tensor(K_NAME.format(layer)).numpy()
        assert np.array_equal(llama_cpp_permute(q, 9), source[f"blk.{layer}.attn_q.weight"])
        assert np.array_equal(llama_cpp_permute(k, 3), source[f"blk.{layer}.attn_k.weight"])
        assert not np.array_equal(q, source[f"blk.{layer}.attn_q.weight"])


@pytest.mark.slow
def test_smollm2_q_and_k_equal_transformers(smollm2, hf_smollm2) -> None:
    hf_model, _ = hf_smollm2
    weights = hf_model.state_dict()
    for layer in range(30):
        for name in (Q_NAME.format(layer), K_NAME.format(layer), f"model.layers.{layer}.self_attn.v_proj.weight"):
            assert torch.equal(_dequantized(smollm2, name), weights[name]), name
    assert torch.equal(_dequantized(smollm2, "model.embed_tokens.weight"), weights["lm_head.weight"])


def test_smollm2_fp32_is_the_dequantized_source(smollm2, smollm2_gguf: Path, tmp_path: Path) -> None:
    out = tmp_path / "fp32.mcp"
    header = compile_model(smollm2_gguf, out, precision="fp32")
    assert {spec.encoding for spec in header.tensors} == {"f32"}
    assert header.lineage.recipe["precision"] == "fp32"
    with open_model(out, verify=True) as dense:
        for name in ("model.embed_tokens.weight", Q_NAME.format(0), K_NAME.format(3), "model.layers.29.mlp.up_proj.weight"):
            assert torch.equal(dense.tensor(name), _dequantized(smollm2, name)), name
        assert torch.equal(dense.tensor("model.norm.weight"), smollm2.tensor("model.norm.weight"))


def test_describe_shows_architecture_lineage_and_every_tensor(smollm2) -> None:
    text = describe(smollm2)
    for row in ("layers           30", "hidden size      576", "FFN size         1536",
                "attention heads  9 query, 3 key/value", "head dim         64", "vocabulary       49152",
                "RoPE             theta 100000", "default  auto", "parameters   134,515,008"):
        assert row in text, row
    assert smollm2.header.lineage.source_sha256 in text
    for spec in smollm2.header.tensors:
        assert re.search(rf"^  {re.escape(spec.name)} +{spec.encoding} ", text, re.MULTILINE), spec.name
    assert "model.embed_tokens.weight                        q8_0      49152x576         30,081,024" in text
    assert f"file size    {smollm2.path.stat().st_size:,} bytes" in text
    short = describe(smollm2, show_plan=False, show_tensors=False)
    assert "precision plan" not in short and "model.layers.0" not in short and "lineage" in short


# --- tiny hand-written GGUF files -------------------------------------------------------------

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 64, 2, 1, 32, 96, 8
TOKENS = ["<|endoftext|>", "a", "b", "c", "ab", "bc", "abc", "d"]


def _weights(seed: int = 0) -> dict[str, np.ndarray]:
    """HF-layout float32 weights of a one-layer model with QKV biases."""
    numbers = np.random.default_rng(seed)

    def normal(*shape: int) -> np.ndarray:
        return numbers.standard_normal(shape).astype(np.float32)

    return {
        "token_embd.weight": normal(VOCAB, HIDDEN), "output.weight": normal(VOCAB, HIDDEN),
        "output_norm.weight": normal(HIDDEN), "blk.0.attn_norm.weight": normal(HIDDEN),
        "blk.0.ffn_norm.weight": normal(HIDDEN),
        "blk.0.attn_q.weight": normal(HEADS * HEAD_DIM, HIDDEN), "blk.0.attn_q.bias": normal(HEADS * HEAD_DIM),
        "blk.0.attn_k.weight": normal(KV_HEADS * HEAD_DIM, HIDDEN), "blk.0.attn_k.bias": normal(KV_HEADS * HEAD_DIM),
        "blk.0.attn_v.weight": normal(KV_HEADS * HEAD_DIM, HIDDEN), "blk.0.attn_v.bias": normal(KV_HEADS * HEAD_DIM),
        "blk.0.attn_output.weight": normal(HIDDEN, HEADS * HEAD_DIM),
        "blk.0.ffn_gate.weight": normal(FFN, HIDDEN), "blk.0.ffn_up.weight": normal(FFN, HIDDEN),
        "blk.0.ffn_down.weight": normal(HIDDEN, FFN),
    }


def write_gguf(path: Path, arch: str, tensors: dict[str, tuple[np.ndarray, QType]], **metadata) -> Path:
    writer = gguf.GGUFWriter(path, arch)
    writer.add_block_count(1)
    writer.add_context_length(metadata.get("context", 256))
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(500000.0)
    writer.add_name("tiny test model")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(TOKENS)
    writer.add_token_types([int(gguf.TokenType.CONTROL)] + [int(gguf.TokenType.NORMAL)] * (VOCAB - 1))
    writer.add_token_merges(["a b", "b c", "ab c"])
    writer.add_eos_token_id(0)
    for name, (array, qtype) in tensors.items():
        writer.add_tensor(name, array, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _encode(weights: dict[str, np.ndarray], types: dict[str, QType]) -> dict[str, tuple[np.ndarray, QType]]:
    encoded = {}
    for name, array in weights.items():
        qtype = types.get(name, QType.F32)
        if qtype == QType.F16:
            encoded[name] = (array.astype(np.float16), qtype)
        else:
            encoded[name] = (quantize(array, qtype) if qtype != QType.F32 else array, qtype)
    return encoded


MIXED_TYPES = {"token_embd.weight": QType.Q8_0, "blk.0.ffn_up.weight": QType.Q4_0,
               "blk.0.ffn_gate.weight": QType.Q4_1, "blk.0.attn_output.weight": QType.F16,
               "blk.0.ffn_down.weight": QType.BF16}


def test_tiny_llama_gguf_unpermutes_q_k_and_their_biases(tmp_path: Path) -> None:
    hf = _weights()
    stored = dict(hf)
    for name, heads in (("attn_q", HEADS), ("attn_k", KV_HEADS)):
        for kind in ("weight", "bias"):
            stored[f"blk.0.{name}.{kind}"] = llama_cpp_permute(hf[f"blk.0.{name}.{kind}"], heads)
    stored["rope_freqs.weight"] = np.linspace(1.0, 8.0, HEAD_DIM // 2, dtype=np.float32)
    source = write_gguf(tmp_path / "tiny.gguf", "llama", _encode(stored, MIXED_TYPES))
    header = compile_model(source, tmp_path / "tiny.mcp", precision="source")
    arch = header.architecture
    assert (arch.hidden_size, arch.head_dim, arch.rope_theta, arch.vocab_size) == (HIDDEN, HEAD_DIM, 500000.0, VOCAB)
    assert arch.attention_bias and not arch.tie_word_embeddings
    assert arch.rope_scaling == RopeScaling(kind="freq_factors", factor=1.0)
    encodings = {spec.name: spec.encoding for spec in header.tensors}
    assert encodings["model.embed_tokens.weight"] == "q8_0" and encodings["model.layers.0.mlp.up_proj.weight"] == "q4_0"
    assert encodings["model.layers.0.self_attn.o_proj.weight"] == "f16"
    assert encodings["model.layers.0.mlp.down_proj.weight"] == "bf16"
    with open_model(tmp_path / "tiny.mcp", verify=True) as model:
        for mcp_name, gguf_name in ((Q_NAME.format(0), "blk.0.attn_q.weight"), (K_NAME.format(0), "blk.0.attn_k.weight"),
                                    ("model.layers.0.self_attn.q_proj.bias", "blk.0.attn_q.bias"),
                                    ("model.layers.0.self_attn.k_proj.bias", "blk.0.attn_k.bias"),
                                    ("lm_head.weight", "output.weight")):
            assert torch.equal(model.tensor(mcp_name), torch.from_numpy(hf[gguf_name])), mcp_name
        assert torch.equal(model.tensor("model.rope_freqs"), torch.from_numpy(stored["rope_freqs.weight"]))
        assert np.array_equal(model.tensor("model.embed_tokens.weight").numpy(), quantize(hf["token_embd.weight"], QType.Q8_0))
        down = model.tensor("model.layers.0.mlp.down_proj.weight")
        assert down.dtype == torch.bfloat16
        assert torch.equal(down, torch.from_numpy(hf["blk.0.ffn_down.weight"]).to(torch.bfloat16))


@pytest.mark.parametrize("precision", ["fp32", "f16", "bf16"])
def test_tiny_gguf_precision_converts_every_tensor(tmp_path: Path, precision: str) -> None:
    hf = _weights(1)
    source = write_gguf(tmp_path / "tiny.gguf", "llama", _encode(hf, MIXED_TYPES))
    compile_model(source, tmp_path / "src.mcp", precision="source")
    with open_model(tmp_path / "src.mcp") as original:
        header = compile_model(source, tmp_path / "conv.mcp", precision=precision)
        target = {"fp32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[precision]
        assert {spec.encoding for spec in header.tensors} == {precision.replace("fp32", "f32")}
        with open_model(tmp_path / "conv.mcp", verify=True) as converted:
            for spec in original.header.tensors:
                if spec.encoding in ("f32", "f16", "bf16"):
                    expected = original.tensor(spec.name).to(torch.float32)
                else:
                    expected = _dequantized(original, spec.name)
                assert torch.equal(converted.tensor(spec.name), expected.to(target)), spec.name


def test_tiny_qwen2_gguf_keeps_rows_as_they_are(tmp_path: Path) -> None:
    hf = _weights(2)
    del hf["output.weight"]
    source = write_gguf(tmp_path / "qwen.gguf", "qwen2", _encode(hf, {}))
    header = compile_model(source, tmp_path / "qwen.mcp", name="tiny-qwen", license="MIT", precision="source")
    assert (header.name, header.lineage.license, header.lineage.base_model) == ("tiny-qwen", "MIT", "tiny test model")
    assert header.architecture.variant == "qwen2" and header.architecture.tie_word_embeddings
    assert header.lineage.recipe["qk_layout"] == "native"
    with open_model(tmp_path / "qwen.mcp") as model:
        assert "lm_head.weight" not in model
        assert torch.equal(model.tensor(Q_NAME.format(0)), torch.from_numpy(hf["blk.0.attn_q.weight"]))
        assert torch.equal(model.tensor("model.layers.0.self_attn.q_proj.bias"), torch.from_numpy(hf["blk.0.attn_q.bias"]))


def test_unsupported_architecture(tmp_path: Path) -> None:
    source = write_gguf(tmp_path / "gemma.gguf", "gemma2", _encode(_weights(), {}))
    with raises(UnsupportedModelError,
                f"{source}: GGUF architecture 'gemma2' is not supported; supported: llama, qwen2, gemma3"):
        compile_model(source, tmp_path / "gemma.mcp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemma.gguf"]


def test_gemma3_without_its_sliding_window_is_a_format_error(tmp_path: Path) -> None:
    source = write_gguf(tmp_path / "gemma.gguf", "gemma3", _encode(_weights(), {}))
    with raises(ModelFormatError, f"{source}: GGUF metadata gemma3.attention.sliding_window is missing"):
        compile_model(source, tmp_path / "gemma.mcp")


def test_unsupported_tensor_type_leaves_no_output(tmp_path: Path) -> None:
    encoded = _encode(_weights(), {})
    rows, cols = encoded["blk.0.ffn_up.weight"][0].shape  # IQ4_NL: 32 weights in 18 bytes, as Q4_0
    encoded["blk.0.ffn_up.weight"] = (np.zeros((rows, cols // 32 * 18), dtype=np.uint8), QType.IQ4_NL)
    source = write_gguf(tmp_path / "tq.gguf", "llama", encoded)
    with raises(UnsupportedModelError, f"{source}: tensor blk.0.ffn_up.weight has type IQ4_NL, which is not supported"):
        compile_model(source, tmp_path / "tq.mcp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tq.gguf"]


def test_unknown_tensor_name(tmp_path: Path) -> None:
    weights = _weights()
    weights["blk.0.ffn_gate_exps.weight"] = weights["blk.0.ffn_gate.weight"]
    source = write_gguf(tmp_path / "moe.gguf", "llama", _encode(weights, {}))
    with raises(UnsupportedModelError, "tensor blk.0.ffn_gate_exps.weight has no place in a Llama-family model"):
        compile_model(source, tmp_path / "moe.mcp")


def test_missing_tensor(tmp_path: Path) -> None:
    weights = _weights()
    del weights["blk.0.ffn_up.weight"]
    source = write_gguf(tmp_path / "gap.gguf", "llama", _encode(weights, {}))
    with raises(ModelFormatError, f"{source}: tensors missing: model.layers.0.mlp.up_proj.weight"):
        compile_model(source, tmp_path / "gap.mcp")


def test_compile_into_a_missing_folder_fails_before_reading(smollm2_gguf: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "model.mcp"
    with raises(ConfigError, f"the folder {out.parent} does not exist"):
        compile_model(smollm2_gguf, out)
    assert list(tmp_path.iterdir()) == []


def test_non_gguf_file_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "model.bin"
    source.write_bytes(b"PK\x03\x04 not a gguf")
    with raises(ModelFormatError, f"{source}: not a GGUF file"):
        compile_model(source, tmp_path / "out.mcp")
