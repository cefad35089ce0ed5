"""The lean decoder (mcp.engine.lean): the PyTorch engine's tokens without torch in the process.

Every test runs the real default model as ``mcp2026 pull`` compiles it. The PyTorch engine
is the reference: with its default plan (native step, exact dots, float32 KV cache) a greedy
request must give the same tokens, text and finish reason in both, for prompts the torch
engine prefills with the native step too (under its dense-prefill limit of 128 rows).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from mcp.engine.layers.rotary import RotaryEmbedding
from mcp.engine.layers.rotary import inverse_frequencies as torch_inverse_frequencies
from mcp.engine.lean import LeanModel
from mcp.engine.lean.sampling import Sampler as LeanSampler
from mcp.engine.lean.sampling import apply_penalties as lean_penalties
from mcp.engine.lean.sampling import filter_logits as lean_filter
from mcp.engine.lean.weights import inverse_frequencies, rope_rows
from mcp.engine.sampler import SamplingParams, apply_penalties, filter_logits
from mcp.modelfile.spec import ArchitectureConfig, RopeScaling
from mcp.runtime import RuntimeConfig, Session
from mcp.base.errors import (CapacityError, ConfigError, ContextLengthError, InvalidRequestError,
                                ModelFormatError)

GREEDY = {"temperature": 0.0}
PROMPTS = [("The capital of France is", True), ("Write a haiku about the sea.", False),
           ("def fibonacci(n):", True), ("List three colours, one per line.", False)]


@pytest.fixture(scope="module")
def lean(smollm2_auto_mcp) -> LeanModel:
    return LeanModel(smollm2_auto_mcp, num_threads=2)


@pytest.fixture(scope="module")
def torch_model(smollm2_auto_mcp):
    session = Session(RuntimeConfig(device="cpu", num_threads=2, decode_dots="exact"))  # the lean decoder's dots
    model = session.load_model(smollm2_auto_mcp)
    yield model
    session.close()


@pytest.mark.parametrize(("prompt", "raw"), PROMPTS)
def test_greedy_tokens_equal_the_pytorch_engines(lean, torch_model, prompt, raw) -> None:
    ours = lean.infer(prompt, raw=raw, max_tokens=40, ignore_eos=True, **GREEDY)
    theirs = torch_model.infer(prompt, raw=raw, max_tokens=40, ignore_eos=True, **GREEDY)
    assert "native step" in torch_model.precision
    assert ours.token_ids == theirs.token_ids
    assert ours.text == theirs.text
    assert (ours.finish_reason, ours.usage.completion_tokens) == ("length", 40)
    assert ours.usage.prompt_tokens == theirs.usage.prompt_tokens
    assert ours.backend == "lean" and ours.precision == "q4_1 layers, int8 head, exact dots, f32 KV cache"


def test_chat_with_a_system_message_stops_at_eos_like_the_pytorch_engine(lean, torch_model) -> None:
    messages = [{"role": "system", "content": "You answer in one word."},
                {"role": "user", "content": "What colour is the sky on a clear day?"}]
    ours, theirs = lean.chat(messages, max_tokens=24, **GREEDY), torch_model.chat(messages, max_tokens=24, **GREEDY)
    assert ours.token_ids == theirs.token_ids and ours.text == theirs.text
    assert ours.finish_reason == theirs.finish_reason == "stop"  # EOS before 24 tokens, and it is not in the text
    assert "<|im_end|>" not in ours.text
    assert lean.infer("What colour is the sky on a clear day?", system="You answer in one word.", max_tokens=24,
                      **GREEDY).token_ids == ours.token_ids


def test_prompt_longer_than_a_chunk_and_the_logprobs_agree(lean, torch_model) -> None:
    prompt = "Rivers carry water from the mountains to the sea, and along the way they " * 5  # ~80 tokens: 3 chunks
    ours = lean.infer(prompt, raw=True, max_tokens=12, logprobs=3, **GREEDY)
    theirs = torch_model.infer(prompt, raw=True, max_tokens=12, logprobs=3, **GREEDY)
    assert ours.usage.prompt_tokens > 64
    assert ours.token_ids == theirs.token_ids
    for mine, reference in zip(ours.logprobs, theirs.logprobs):
        assert mine.token == reference.token
        # The torch engine runs this prompt through the step as one chunk of ~80 rows, the lean
        # one as chunks of 32, so the kernels tile the fp32 sums otherwise: the most seen apart
        # is 2.0e-3 (an Intel host); a wrong position, mask or scale moves logprobs by tenths.
        assert mine.logprob == pytest.approx(reference.logprob, abs=1e-2)
        assert [t for t, _ in mine.top_logprobs] == [t for t, _ in reference.top_logprobs]


def test_stop_strings_and_streams_release_the_same_text(lean, torch_model) -> None:
    options = {"raw": True, "max_tokens": 40, "stop": ["\n"], **GREEDY}
    ours, theirs = lean.infer("A short poem:\n", **options), torch_model.infer("A short poem:\n", **options)
    assert (ours.text, ours.finish_reason) == (theirs.text, theirs.finish_reason)
    assert "\n" not in ours.text and ours.finish_reason == "stop"
    assert "".join(lean.stream("A short poem:\n", **options)) == ours.text


def test_a_shared_prefix_is_reused_and_gives_the_same_tokens(smollm2_auto_mcp, lean) -> None:
    first = "The quick brown fox jumps over the lazy dog. " * 3
    lean.infer(first + "Then", raw=True, max_tokens=4, **GREEDY)
    again = lean.infer(first + "After that", raw=True, max_tokens=16, ignore_eos=True, **GREEDY)
    fresh = LeanModel(smollm2_auto_mcp, num_threads=2).infer(first + "After that", raw=True, max_tokens=16,
                                                              ignore_eos=True, **GREEDY)
    assert again.usage.cached_tokens >= len(lean.encode(first)) - 1
    assert fresh.usage.cached_tokens == 0
    assert again.token_ids == fresh.token_ids


def test_f16_kv_cache_runs_and_differs_only_slightly(smollm2_auto_mcp, lean) -> None:
    half = LeanModel(smollm2_auto_mcp, num_threads=2, kv_cache_dtype="f16", max_context=512)
    assert half.precision.endswith("f16 KV cache")
    ours = half.infer("The capital of France is", raw=True, max_tokens=8, logprobs=0, **GREEDY)
    full = lean.infer("The capital of France is", raw=True, max_tokens=8, logprobs=0, **GREEDY)
    assert ours.token_ids[:4] == full.token_ids[:4]
    assert ours.logprobs[0].logprob == pytest.approx(full.logprobs[0].logprob, abs=0.05)


def test_seeded_sampling_is_reproducible(lean) -> None:
    options = {"raw": True, "max_tokens": 16, "temperature": 0.9, "top_p": 0.95, "ignore_eos": True}
    first, second = lean.infer("Once upon a time", seed=7, **options), lean.infer("Once upon a time", seed=7, **options)
    other = lean.infer("Once upon a time", seed=8, **options)
    assert first.token_ids == second.token_ids
    assert first.token_ids != other.token_ids


def test_bad_requests_are_refused_and_the_model_keeps_serving(lean) -> None:
    with pytest.raises(InvalidRequestError, match="the prompt is empty"):
        lean.infer("", raw=True)
    with pytest.raises(InvalidRequestError, match="unknown argument.*beam_width"):
        lean.infer("hi", beam_width=2)
    with pytest.raises(InvalidRequestError, match="temperature must be >= 0"):
        lean.infer("hi", temperature=-1)
    with pytest.raises(InvalidRequestError, match="system needs the chat template"):
        lean.infer("hi", raw=True, system="be brief")
    with pytest.raises(InvalidRequestError, match="messages must be a list"):
        lean.chat("hello")
    with pytest.raises(InvalidRequestError, match="prompt must be a string"):
        lean.infer(42)
    with pytest.raises(ContextLengthError, match="the context holds 8192"):
        lean.infer("word " * 9000, raw=True)
    assert lean.infer("The capital of France is", raw=True, max_tokens=3, **GREEDY).usage.completion_tokens == 3


def test_one_sequence_at_a_time_and_a_closed_stream_frees_it(lean) -> None:
    stream = lean.stream("Tell me a story.", max_tokens=64, **GREEDY)
    next(stream)
    with pytest.raises(CapacityError, match="one sequence at a time"):
        lean.infer("hi", max_tokens=2)
    stream.close()
    assert lean.infer("hi", max_tokens=2, **GREEDY).usage.completion_tokens >= 1


def test_max_tokens_is_cut_at_the_context(smollm2_auto_mcp) -> None:
    small = LeanModel(smollm2_auto_mcp, num_threads=2, max_context=40)
    prompt = "one two three four five six seven eight nine ten"
    out = small.infer(prompt, raw=True, max_tokens=100, ignore_eos=True, **GREEDY)
    assert out.usage.prompt_tokens + out.usage.completion_tokens == 40
    assert out.finish_reason == "length"


def test_bad_configuration_is_refused(smollm2_auto_mcp, tmp_path) -> None:
    with pytest.raises(ConfigError, match="kv_cache_dtype must be one of f32, f16, got 'int8'"):
        LeanModel(smollm2_auto_mcp, kv_cache_dtype="int8")
    with pytest.raises(ConfigError, match=r"max_context must be an integer in \[2, 8192\]"):
        LeanModel(smollm2_auto_mcp, max_context=10_000)
    with pytest.raises(ConfigError, match="num_threads must be a positive integer"):
        LeanModel(smollm2_auto_mcp, num_threads=0)
    not_a_model = tmp_path / "x.mcp"
    not_a_model.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ModelFormatError, match="it is a GGUF file"):
        LeanModel(not_a_model)


def test_files_not_stored_for_the_native_kernels_are_refused_with_what_to_do(smollm2_mcp, tiny_mcp) -> None:
    # precision "source" keeps the GGUF blocks as they are (the embedding: Q8_0); the tiny model's are bf16
    for path, form in ((smollm2_mcp, "q8_0"), (tiny_mcp, "bf16")):
        with pytest.raises(ModelFormatError, match=f"stored as {form}.*Run this file with mcp.runtime.Session"):
            LeanModel(path)


def test_rope_tables_are_torch_angles_within_one_unit_in_the_last_place() -> None:
    base = dict(architecture="llama", variant="llama", vocab_size=10, hidden_size=64, intermediate_size=128,
                num_layers=1, num_attention_heads=1, num_kv_heads=1, head_dim=64, max_position_embeddings=8192,
                rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True, attention_bias=False)
    llama3 = RopeScaling(kind="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                         original_max_position_embeddings=8192)
    for scaling in (None, llama3, RopeScaling(kind="linear", factor=4.0)):
        arch = ArchitectureConfig(**base, rope_scaling=scaling)
        ours, theirs = inverse_frequencies(arch), torch_inverse_frequencies(arch).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=2e-7, atol=0)
        rotary = RotaryEmbedding(torch.from_numpy(ours), 8192, torch.float32)
        rotary.fill(8192)  # the torch path fills rows as positions are reached
        cos, sin = rope_rows(ours, 0, 8192)
        assert np.abs(cos - rotary.cos.numpy()).max() <= 6e-8
        assert np.abs(sin - rotary.sin_signed.numpy()).max() <= 6e-8
        middle_cos, _ = rope_rows(ours, 4096, 4100)
        assert np.array_equal(middle_cos, cos[4096:4100])
    plain = ArchitectureConfig(**base, rope_scaling=None)
    assert np.array_equal(inverse_frequencies(plain), torch_inverse_frequencies(plain).numpy())  # bit for bit


@pytest.mark.parametrize("params", [
    SamplingParams(temperature=0.7, top_k=50),
    SamplingParams(temperature=1.3, top_p=0.8),
    SamplingParams(temperature=0.5, min_p=0.1, repetition_penalty=1.3, presence_penalty=0.5, frequency_penalty=0.4),
    SamplingParams(temperature=1.0, top_k=200, top_p=0.9, min_p=0.02),
])
def test_numpy_sampler_keeps_the_torch_samplers_candidates(params) -> None:
    logits = np.random.default_rng(3).normal(0, 3, 49152).astype(np.float32)
    prompt, generated = [5, 9, 9, 31], [9, 44, 44, 44, 1000]
    ours = lean_penalties(logits, prompt, generated, params)
    theirs = apply_penalties(torch.from_numpy(logits), prompt, generated, params)
    np.testing.assert_array_equal(ours, theirs.numpy())
    kept, ids = lean_filter(ours, params)
    kept_t, ids_t = filter_logits(theirs, params)
    assert sorted(ids.tolist()) == sorted(ids_t.tolist())
    np.testing.assert_allclose(kept[np.argsort(ids)], kept_t.numpy()[np.argsort(ids_t.numpy())], rtol=1e-6)


def test_numpy_sampler_draws_from_the_distribution_and_greedy_takes_the_first_max() -> None:
    logits = np.log(np.array([0.1, 0.6, 0.3, 1e-12], dtype=np.float32))
    sampler = LeanSampler(SamplingParams(temperature=1.0, seed=-5))
    counts = np.bincount([sampler.sample(logits, [], []).token_id for _ in range(4000)], minlength=4)
    np.testing.assert_allclose(counts / 4000, [0.1, 0.6, 0.3, 0.0], atol=0.03)
    tie = np.array([1.0, 3.0, 3.0, 0.0], dtype=np.float32)
    assert LeanSampler(SamplingParams(temperature=0.0)).sample(tie, [], []).token_id == 1
    out = LeanSampler(SamplingParams(temperature=0.0, logprobs=2)).sample(tie, [], [])
    assert [token for token, _ in out.top_logprobs] == [1, 2]
    assert out.logprob == pytest.approx(float(torch.log_softmax(torch.from_numpy(tie), 0)[1]), abs=1e-6)


def test_a_process_running_the_lean_decoder_never_imports_torch(smollm2_auto_mcp) -> None:
    script = textwrap.dedent(f"""
        import json, sys
        from mcp.engine.lean import LeanModel
        model = LeanModel({str(smollm2_auto_mcp)!r}, num_threads=2)
        out = model.chat([{{"role": "user", "content": "Say hello."}}], max_tokens=8, temperature=0)
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        print(json.dumps({{"torch": "torch" in sys.modules, "tokens": len(out.token_ids),
                          "peak_kib": int(status["VmHWM"].split()[0])}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["torch"] is False and report["tokens"] >= 1
    # import torch alone makes a process ~220 MiB resident; the whole lean run stays well below
    assert report["peak_kib"] < 200 * 1024, report
