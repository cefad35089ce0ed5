"""Gemma 3 against transformers fp32: a tiny random Gemma3ForCausalLM, compiled from its HF folder
and from a GGUF written with the gguf package as llama.cpp lays one out.

Seven layers with a window of 16 and 72-token prompts: the local layers' window, the one global
layer, the two RoPE bases, q/k norms, the four norms a layer, GeGLU and the embedding scale all
show in the logits. The paged engine loop (batched decode, prefix caching) must give each
sequence transformers' greedy tokens.
"""

from __future__ import annotations

import shutil

import gguf
import pytest
import torch
from decoder_models import tiny_gemma3
from families import (
    IDS, assert_loop_matches, assert_matches, assert_native_step_matches, compiled_engine, native_step_engine,
    save_folder, step_logits, tokenizer_files, write_gguf_tensors,
)

from mcp.compiler.compiler import compile_model
from mcp.engine.engine import NativeEngine
from mcp.engine.kv.hybrid import HybridKVCacheManager
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

WINDOW, LAYERS, VOCAB = 16, 7, 49152  # IDS (families.py): 72 tokens, past the window

__all__ = ["tokenizer_files"]  # a fixture


def _hf_model(query_pre_attn_scalar: int):
    return tiny_gemma3(query_pre_attn_scalar, WINDOW, LAYERS)


@pytest.fixture(scope="module")
def hf_model():
    """A scale other than head_dim's, as an HF config may give (a GGUF cannot say it)."""
    return _hf_model(48)


@pytest.fixture(scope="module")
def hf_folder(hf_model, tokenizer_files, tmp_path_factory):
    return save_folder(hf_model, tokenizer_files, tmp_path_factory.mktemp("gemma3-hf"))


@pytest.fixture(scope="module")
def engine(hf_folder, tmp_path_factory) -> NativeEngine:
    return compiled_engine(hf_folder, tmp_path_factory.mktemp("gemma3-mcp") / "tiny.mcp")


def test_hf_folder_compiles_to_gemma3_with_its_window(engine, hf_folder, tmp_path):
    from mcp.modelfile.inspect import describe

    compile_model(hf_folder, tmp_path / "tiny.mcp", precision="source")
    with open_model(tmp_path / "tiny.mcp") as model_file:
        text = describe(model_file, show_plan=False, show_tensors=False)
    assert "sliding window   16 tokens, 5 local layers to 1 global" in text and "local RoPE       theta 10000" in text
    arch = engine.header.architecture
    assert (arch.architecture, arch.sliding_window, arch.sliding_window_pattern) == ("gemma3", WINDOW, 6)
    assert (arch.rope_theta, arch.rope_local_theta, arch.query_pre_attn_scalar) == (1e6, 1e4, 48.0)
    assert [layer.local for layer in engine.model.layers] == [True] * 5 + [False, True]


def test_hf_folder_matches_transformers(engine, hf_model, hf_greedy):
    assert_matches(engine, hf_model, hf_greedy)


def test_gguf_matches_transformers(hf_greedy, tmp_path):
    hf_model = _hf_model(32)  # llama.cpp scales by head_dim ** -0.5 (but for the 27B)
    path = tmp_path / "tiny-gemma3.gguf"
    _write_gguf(hf_model, path)
    assert_matches(compiled_engine(path, tmp_path / "tiny.mcp"), hf_model, hf_greedy)


def test_engine_loop_batches_and_reuses_prefixes_with_transformers_tokens(engine, hf_model, hf_greedy):
    assert_loop_matches(engine, hf_model, hf_greedy)


def test_engine_loop_keeps_the_local_layers_kv_within_the_window(engine, hf_model, hf_greedy):
    """Three sequences of 72-token prompts and 48 new tokens, window 16: transformers' greedy
    tokens, while the local layers' pool holds no more than the window and a step's blocks per
    sequence and the global layers' pool holds every position (kv/hybrid.py)."""
    params = SamplingParams(max_tokens=48, temperature=0.0, ignore_eos=True)
    prompts = [IDS, IDS[1:] + [9], IDS[2:] + [9, 9]]
    config = LoopConfig(kv_cache_bytes=1 << 22, scheduler=SchedulerConfig(max_num_batched_tokens=32))
    loop, held = EngineLoop(engine, config), []
    assert isinstance(loop.kv, HybridKVCacheManager)
    loop.hooks.add("on_token_generated", lambda event: held.append(
        (loop.kv.local.num_used_blocks, loop.kv.full.num_used_blocks)))
    try:
        handles = [loop.submit(ids, params) for ids in prompts]
        assert [[s.token_id for s in h] for h in handles] == [hf_greedy(hf_model, ids, 48) for ids in prompts]
    finally:
        loop.close()
    local_peak = -(-(WINDOW + 32) // 16) + 1  # blocks of 16: the window and one step, per sequence
    assert max(local for local, _ in held) <= 3 * local_peak
    assert max(full for _, full in held) >= 3 * (72 + 47) // 16  # every position of every sequence
    assert loop.kv.local.usage == loop.kv.full.usage == 0


def test_gemma3_gguf_with_a_bad_window_is_refused(hf_model, tmp_path):
    from mcp.base.errors import ModelFormatError

    path = tmp_path / "bad.gguf"
    _write_gguf(hf_model, path, window=0)
    with pytest.raises(ModelFormatError, match="gemma3.attention.sliding_window must be an integer from 1"):
        compile_model(path, tmp_path / "bad.mcp")


_GGUF_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
               "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
               "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def _write_gguf(hf_model, path, window: int = WINDOW, q8_0: bool = False) -> None:
    """The model as llama.cpp's converter writes a Gemma 3 GGUF: F32 tensors (``q8_0``: its
    matrices quantized to Q8_0 by the gguf package), norms as 1 + w, Q/K rows as they are, and a
    Gemma-style SentencePiece vocabulary."""
    config = hf_model.config
    writer = gguf.GGUFWriter(path, "gemma3")
    for add, value in ((writer.add_block_count, LAYERS), (writer.add_context_length, 256),
                       (writer.add_embedding_length, 64), (writer.add_feed_forward_length, 128),
                       (writer.add_head_count, 4), (writer.add_head_count_kv, 2), (writer.add_key_length, 32),
                       (writer.add_value_length, 32), (writer.add_layer_norm_rms_eps, config.rms_norm_eps),
                       (writer.add_rope_freq_base, 1e6), (writer.add_sliding_window, window)):
        add(value)
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.CONTROL] * 4 + [gguf.TokenType.BYTE] * 256
    filler = VOCAB - len(tokens)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens + [f"t{i}" for i in range(filler)])
    writer.add_token_types([int(t) for t in types] + [int(gguf.TokenType.NORMAL)] * filler)
    writer.add_token_scores([0.0] * VOCAB)
    for add, value in ((writer.add_bos_token_id, 2), (writer.add_eos_token_id, 1)):
        add(value)
    tensors = {_gguf_name(name): tensor.float().numpy() + (1.0 if name.endswith("norm.weight") else 0.0)
               for name, tensor in hf_model.state_dict().items() if name != "lm_head.weight"}  # tied
    write_gguf_tensors(writer, tensors, gguf.GGMLQuantizationType.Q8_0 if q8_0 else gguf.GGMLQuantizationType.F32)


def _gguf_name(name: str) -> str:
    if name in ("model.embed_tokens.weight", "model.norm.weight"):
        return {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}[name]
    _, _, index, rest = name.split(".", 3)
    return f"blk.{index}.{_GGUF_NAMES[rest.removesuffix('.weight')]}.weight"


@pytest.mark.parametrize("change, message", [
    ({"layer_types": ["full_attention"] + ["sliding_attention"] * (LAYERS - 1)},
     "layer_types must repeat 0 sliding layers then one full layer"),
    ({"hidden_activation": "silu"}, "hidden_activation 'silu' is not supported"),
    ({"final_logit_softcapping": 30.0}, "final_logit_softcapping is not supported"),
])
def test_hf_gemma3_configs_the_engine_cannot_run_are_refused(hf_folder, tmp_path, change, message):
    import json

    from mcp.base.errors import UnsupportedModelError

    folder = tmp_path / "changed"
    shutil.copytree(hf_folder, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(UnsupportedModelError, match=message):
        compile_model(folder, tmp_path / "changed.mcp")


@pytest.fixture(scope="module")
def q8_mcp(tmp_path_factory):
    """The model as a Q8_0 GGUF, compiled with the auto plan."""
    folder = tmp_path_factory.mktemp("gemma3-q8")
    _write_gguf(_hf_model(32), folder / "tiny-q8_0.gguf", q8_0=True)
    compile_model(folder / "tiny-q8_0.gguf", folder / "tiny.mcp")
    return folder / "tiny.mcp"


@pytest.fixture(scope="module")
def q8_engine(q8_mcp) -> NativeEngine:
    return native_step_engine(q8_mcp)


@pytest.mark.parametrize("block_size", [16, 32])
def test_native_step_matches_the_torch_modules_past_the_window(q8_engine, block_size):
    """Three sequences past the window (prefill chunks of 8, then 24 decodes together). Blocks of
    16: the windowed layers' own pool, its blocks dropped behind the window; blocks of 32 (past
    the window of 16): one pool, the window inside a block."""
    assert_native_step_matches(q8_engine, [IDS[:40], IDS[3:59], IDS[7:31]], num_steps=24, block_size=block_size)


@pytest.mark.parametrize("native", [True, False])
def test_rope_tables_fill_as_positions_are_reached_with_the_same_logits(q8_mcp, native, monkeypatch):
    """Rows filled 16 at a time as the steps reach them (the native step and the torch modules
    both): the same logits, bit for bit, as from tables filled whole before the first step, and
    only the rows reached are filled."""
    from mcp.engine.layers import rotary

    whole = native_step_engine(q8_mcp)
    for table in (whole.model.rotary, whole.model.local_rotary):
        table.fill(table.max_positions)
    expected = step_logits(whole, native, [IDS[:40], IDS[3:59]], 24)
    monkeypatch.setattr(rotary, "ROWS_PER_FILL", 16)
    grown = native_step_engine(q8_mcp)
    logits = step_logits(grown, native, [IDS[:40], IDS[3:59]], 24)
    assert all(torch.equal(a, b) for a, b in zip(logits, expected)) and len(logits) == len(expected)
    reached = 56 + 24  # the longest prompt and its decodes: positions 0..79
    assert grown.model.rotary.num_rows == grown.model.local_rotary.num_rows == reached < grown.model.rotary.max_positions
