"""Mistral's sliding window, applied (no longer capped away), against transformers fp32.

A tiny random MistralForCausalLM with a window of 16 and a context of 256: 40-token prompts and
20 new tokens run well past the window on every layer, from its HF folder and from a Q8_0 GGUF
(``llama`` architecture with ``llama.attention.sliding_window``, Q/K rows permuted as llama.cpp's
converter writes them). The paged engine loop (batched decode, prefix caching) gives each sequence
transformers' greedy tokens; over the native kernels the native step applies the window as the
torch modules do.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from families import IDS, assert_loop_matches
from gguf import GGMLQuantizationType

from mcp.compiler.compiler import compile_model
from mcp.engine import kernels
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

VOCAB, WINDOW, HEADS, KV_HEADS = 49152, 16, 4, 2
PROMPTS = [IDS[:40], IDS[5:45], IDS[:17], IDS[:40] + [77, 78, 79]]  # the last shares two blocks with the first


def _hf_model():
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    config = MistralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
                           rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
                           sliding_window=WINDOW)
    model = MistralForCausalLM(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(torch.randn_like(param) * 0.1)
    return model


@pytest.fixture(scope="module")
def hf_model():
    return _hf_model()


@pytest.fixture(scope="module")
def hf_folder(hf_model, smollm2_gguf, tmp_path_factory):
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("mistral-hf")
    hf_model.save_pretrained(folder, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name).save_pretrained(folder)
    return folder


def _engine(path, **options) -> NativeEngine:
    with open_model(path, verify=True) as model_file:
        return NativeEngine(model_file, EngineOptions(**{"device": "cpu", "precision": "fp32", **options}))


@pytest.fixture(scope="module")
def engine(hf_folder, tmp_path_factory) -> NativeEngine:
    out = tmp_path_factory.mktemp("mistral-mcp") / "tiny.mcp"
    compile_model(hf_folder, out, precision="source")
    return _engine(out)


def _assert_loop_matches(engine, hf_model, hf_greedy):
    return assert_loop_matches(engine, hf_model, hf_greedy, PROMPTS, num_tokens=20)


def test_hf_folder_keeps_its_window_and_its_context(engine, hf_folder, tmp_path):
    from mcp.modelfile.inspect import describe

    arch = engine.header.architecture
    assert (arch.architecture, arch.sliding_window, arch.max_position_embeddings) == ("llama", WINDOW, 256)
    assert "context_capped_to_sliding_window" not in engine.header.lineage.recipe
    compile_model(hf_folder, tmp_path / "tiny.mcp", precision="source")
    with open_model(tmp_path / "tiny.mcp") as model_file:
        text = describe(model_file, show_plan=False, show_tensors=False)
    assert f"sliding window   {WINDOW} tokens, every layer" in text and "context          256 tokens" in text


def test_prompt_longer_than_the_window_matches_transformers(engine, hf_model, hf_greedy):
    from transformers import MistralForCausalLM

    unwindowed = MistralForCausalLM(hf_model.config.__class__(**{**hf_model.config.to_dict(), "sliding_window": None}))
    unwindowed.load_state_dict(hf_model.state_dict())
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([IDS[:40]])).logits[0].float()
        without_window = unwindowed.eval()(torch.tensor([IDS[:40]])).logits[0].float()
    assert (theirs - without_window).abs().max().item() > 1e-3  # the window shows in the logits
    ours = contiguous_decoder(engine).score(IDS[:40])
    assert (ours - theirs).abs().max().item() < 1e-5
    params = SamplingParams(max_tokens=20, temperature=0.0, ignore_eos=True)
    generated = [step.token_id for step in contiguous_decoder(engine).generate(IDS[:40], params)]
    assert generated == hf_greedy(hf_model, IDS[:40], 20)


def test_engine_loop_batches_and_reuses_prefixes_past_the_window(engine, hf_model, hf_greedy):
    _assert_loop_matches(engine, hf_model, hf_greedy)


def test_the_kv_cache_frees_what_the_window_no_longer_sees(engine, hf_model, hf_greedy):
    """With no ``window_tokens`` configured the loop takes the model's window: blocks wholly before
    it are freed as a sequence grows, a sequence holds the window's blocks and the one being
    filled, and every token is still transformers' (the freed keys were outside every window)."""
    params = SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True)
    loop = EngineLoop(engine, LoopConfig(kv_cache_bytes=1 << 22))
    assert loop.kv.window_tokens == WINDOW
    held: list[int] = []
    loop.hooks.add("on_token_generated", lambda e: held.append(loop.kv.num_used_blocks))  # on the loop thread
    try:
        handle = loop.submit(IDS[:40], params)
        assert [s.token_id for s in handle] == hf_greedy(hf_model, IDS[:40], 40)
        assert max(held) <= WINDOW // 16 + 2, held  # 80 tokens would need 5 blocks unwindowed
    finally:
        loop.close()


def test_the_native_step_applies_the_window(hf_model, hf_greedy, tmp_path):
    """A Q8_0 GGUF on the native kernels: the native step sees each row's last WINDOW positions
    (over the blocks the loop frees behind the window) and gives transformers' tokens (on the
    dequantized weights), as the torch step does."""
    reference = _hf_model()
    write_mistral_gguf(hf_model, reference, tmp_path / "tiny-mistral.gguf")
    header = compile_model(tmp_path / "tiny-mistral.gguf", tmp_path / "tiny.mcp", precision="source")
    assert header.architecture.sliding_window == WINDOW
    native = {"precision": "auto", "decode_dots": "exact"}  # Q8_0 on the native kernels, exact fp32 sums
    engine = _engine(tmp_path / "tiny.mcp", **native)
    assert engine.plan.decode_step == "native" and engine.precision == "mcp-int8×16 / act fp32 / native step"
    assert _assert_loop_matches(engine, reference, hf_greedy) is not None
    torch_step = _engine(tmp_path / "tiny.mcp", **native, native_step=False)
    assert torch_step.plan.decode_step == "torch" and _assert_loop_matches(torch_step, reference, hf_greedy) is None
    with torch.inference_mode():
        theirs = reference(torch.tensor([IDS[:40]])).logits[0].float()
    assert (contiguous_decoder(engine).score(IDS[:40]) - theirs).abs().max().item() < 1e-4


@pytest.mark.skipif(not kernels.available(), reason="the lean decoder needs the native kernels")
def test_lean_decoder_refuses_a_context_past_the_window(hf_model, tmp_path):
    """The lean decoder runs the native step, which has no window: only a context within it."""
    from mcp.base.errors import ConfigError
    from mcp.engine.lean.model import LeanModel

    write_mistral_gguf(hf_model, _hf_model(), tmp_path / "tiny-mistral.gguf")
    compile_model(tmp_path / "tiny-mistral.gguf", tmp_path / "tiny.mcp")  # auto: Q8_0 as grouped int8
    with pytest.raises(ConfigError, match=f"no sliding window; this model attends through one of {WINDOW} tokens"):
        LeanModel(tmp_path / "tiny.mcp")
    assert LeanModel(tmp_path / "tiny.mcp", max_context=WINDOW).max_context == WINDOW


def write_mistral_gguf(hf_model, reference, path) -> None:
    """``hf_model`` as a Q8_0 llama GGUF with the window; ``reference`` gets the dequantized weights."""
    writer = gguf.GGUFWriter(path, "llama")
    for add, value in ((writer.add_block_count, 2), (writer.add_context_length, 256),
                       (writer.add_embedding_length, 64), (writer.add_feed_forward_length, 128),
                       (writer.add_head_count, HEADS), (writer.add_head_count_kv, KV_HEADS),
                       (writer.add_layer_norm_rms_eps, 1e-5), (writer.add_rope_freq_base, 10000.0),
                       (writer.add_sliding_window, WINDOW)):
        add(value)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])
    writer.add_token_types([int(gguf.TokenType.NORMAL)] * VOCAB)
    writer.add_token_merges([])
    writer.add_eos_token_id(2)
    state = {}
    for name, tensor in hf_model.state_dict().items():
        value = tensor.float().numpy()
        if value.ndim == 2:
            blocks = gguf.quants.quantize(value, GGMLQuantizationType.Q8_0)
            value = gguf.quants.dequantize(blocks, GGMLQuantizationType.Q8_0).reshape(value.shape)
            stored = _permuted(name, blocks)
            writer.add_tensor(_gguf_name(name), stored, raw_shape=stored.shape, raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(_gguf_name(name), np.ascontiguousarray(value))
        state[name] = torch.from_numpy(np.array(value))
    reference.load_state_dict(state)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _permuted(name: str, rows: np.ndarray) -> np.ndarray:
    """llama.cpp's converter order for Q/K rows (what the compiler undoes); whole rows, so blocks too."""
    heads = HEADS if "q_proj" in name else KV_HEADS if "k_proj" in name else None
    if heads is None:
        return rows
    return rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


_GGUF_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def _gguf_name(name: str) -> str:
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    if name in top:
        return top[name]
    _, _, index, rest = name.split(".", 3)
    return f"blk.{index}.{_GGUF_NAMES[rest.removesuffix('.weight')]}.weight"
