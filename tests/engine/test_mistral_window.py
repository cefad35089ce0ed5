"""Mistral's sliding window, applied (no longer capped away), against transformers fp32.

A tiny random MistralForCausalLM with a window of 16 and a context of 256: 40-token prompts and
20 new tokens run well past the window on every layer, from its HF folder and from a Q8_0 GGUF
(``llama`` architecture with ``llama.attention.sliding_window``, Q/K rows permuted as llama.cpp's
converter writes them). The paged engine loop (batched decode, prefix caching) gives each sequence
transformers' greedy tokens; over the native kernels the native step applies the window as the
torch modules do.
"""

from __future__ import annotations

import pytest
import torch
from decoder_models import tiny_mistral, write_mistral_gguf
from families import IDS, assert_loop_matches, compiled_engine, cpu_engine, save_folder, tokenizer_files

from mcp.compiler.compiler import compile_model
from mcp.engine import kernels
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import NativeEngine
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

__all__ = ["tokenizer_files"]  # a fixture

WINDOW = 16
PROMPTS = [IDS[:40], IDS[5:45], IDS[:17], IDS[:40] + [77, 78, 79]]  # the last shares two blocks with the first


@pytest.fixture(scope="module")
def hf_model():
    return tiny_mistral(WINDOW)


@pytest.fixture(scope="module")
def hf_folder(hf_model, tokenizer_files, tmp_path_factory):
    return save_folder(hf_model, tokenizer_files, tmp_path_factory.mktemp("mistral-hf"))


@pytest.fixture(scope="module")
def engine(hf_folder, tmp_path_factory) -> NativeEngine:
    return compiled_engine(hf_folder, tmp_path_factory.mktemp("mistral-mcp") / "tiny.mcp")


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
    reference = tiny_mistral(WINDOW)
    write_mistral_gguf(hf_model, reference, tmp_path / "tiny-mistral.gguf")
    header = compile_model(tmp_path / "tiny-mistral.gguf", tmp_path / "tiny.mcp", precision="source")
    assert header.architecture.sliding_window == WINDOW
    native = {"precision": "auto", "decode_dots": "exact"}  # Q8_0 on the native kernels, exact fp32 sums
    engine = cpu_engine(tmp_path / "tiny.mcp", **native)
    assert engine.plan.decode_step == "native" and engine.precision == "mcp-int8×16 / act fp32 / native step"
    assert _assert_loop_matches(engine, reference, hf_greedy) is not None
    torch_step = cpu_engine(tmp_path / "tiny.mcp", **native, native_step=False)
    assert torch_step.plan.decode_step == "torch" and _assert_loop_matches(torch_step, reference, hf_greedy) is None
    with torch.inference_mode():
        theirs = reference(torch.tensor([IDS[:40]])).logits[0].float()
    assert (contiguous_decoder(engine).score(IDS[:40]) - theirs).abs().max().item() < 1e-4


@pytest.mark.skipif(not kernels.available(), reason="the lean decoder needs the native kernels")
def test_lean_decoder_refuses_a_context_past_the_window(hf_model, tmp_path):
    """The lean decoder runs the native step, which has no window: only a context within it."""
    from mcp.base.errors import ConfigError
    from mcp.engine.lean.model import LeanModel

    write_mistral_gguf(hf_model, tiny_mistral(WINDOW), tmp_path / "tiny-mistral.gguf")
    compile_model(tmp_path / "tiny-mistral.gguf", tmp_path / "tiny.mcp")  # auto: Q8_0 as grouped int8
    with pytest.raises(ConfigError, match=f"no sliding window; this model attends through one of {WINDOW} tokens"):
        LeanModel(tmp_path / "tiny.mcp")
    assert LeanModel(tmp_path / "tiny.mcp", max_context=WINDOW).max_context == WINDOW
