"""The SDK on the real default model: the brief's calls, streaming, chat, options, errors."""

from __future__ import annotations

import shutil
import threading

import pytest

from mcp.runtime import (
    ConfigError,
    ContextLengthError,
    InvalidRequestError,
    ModelFormatError,
    ModelNotFoundError,
    Session,
)
from mcp.config.runtime import RuntimeConfig
from mcp.engine import kernels

GREEDY = {"temperature": 0.0, "max_tokens": 24}
PROMPT = "Explain quantum entanglement in simple terms."


@pytest.fixture(scope="module")
def session(smollm2_auto_mcp):
    config = RuntimeConfig(model_dir=smollm2_auto_mcp.parent, device="cpu")
    with Session(config) as session:
        yield session


@pytest.fixture(scope="module")
def model(session):
    return session.load_model("smollm2-135m-instruct.mcp")


def test_quickstart_call_answers(model):
    result = model.infer(prompt=PROMPT, max_tokens=48, temperature=0.7, seed=1)
    assert isinstance(result.text, str) and len(result.text.split()) >= 5
    assert result.finish_reason in ("stop", "length")
    assert result.usage.completion_tokens == len(result.token_ids) <= 48
    assert result.usage.prompt_tokens > 10  # the chat template wraps the prompt
    assert result.backend == "native" and result.precision == model.precision
    # the auto plan: integer dots of two int8 digits where the native kernels have SIMD
    dots = " / int8x2 dots" if kernels.isa() != "scalar" else ""
    assert result.precision == f"mcp-q4_1×210 mcp-int8×1 / act fp32{dots} / native step"
    assert 0 < result.timings.ttft_s <= result.timings.total_s
    assert result.timings.tpot_s > 0


def test_greedy_is_deterministic_and_matches_stream(model):
    first = model.infer(PROMPT, **GREEDY)
    second = model.infer(PROMPT, **GREEDY)
    assert first.token_ids == second.token_ids and first.text == second.text
    assert "".join(model.stream(PROMPT, **GREEDY)) == first.text
    assert model.engine.tokenizer.decode(first.token_ids, skip_special_tokens=True) == first.text


def test_same_seed_same_sample_other_seed_differs(model):
    runs = [model.infer(PROMPT, temperature=1.0, max_tokens=24, seed=seed).token_ids for seed in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_chat_equals_infer_of_single_user_message(model):
    chat = model.chat([{"role": "user", "content": PROMPT}], **GREEDY)
    assert chat.token_ids == model.infer(PROMPT, **GREEDY).token_ids
    assert "".join(model.chat_stream([{"role": "user", "content": PROMPT}], **GREEDY)) == chat.text


def test_raw_prompt_skips_the_chat_template(model):
    raw = model.infer("The capital of France is", raw=True, **GREEDY)
    assert raw.usage.prompt_tokens == len(model.tokenize("The capital of France is"))
    assert "Paris" in raw.text


def test_stop_sequence_ends_text_before_it(model):
    full = model.infer(PROMPT, **GREEDY).text
    words = full.split()
    stop = " " + words[len(words) // 2]
    cut = model.infer(PROMPT, stop=[stop], **GREEDY)
    assert cut.finish_reason == "stop"
    assert cut.text == full[: full.index(stop)]
    assert stop not in cut.text


def test_max_tokens_one_and_length_finish(model):
    result = model.infer(PROMPT, temperature=0.0, max_tokens=1)
    assert len(result.token_ids) == 1 and result.finish_reason == "length"


def test_logprobs_are_reported(model):
    result = model.infer(PROMPT, temperature=0.0, max_tokens=4, logprobs=3)
    assert len(result.logprobs) == 4
    for entry in result.logprobs:
        assert len(entry.top_logprobs) == 3
        assert entry.logprob == pytest.approx(entry.top_logprobs[0][1])  # greedy took the top token
        assert entry.logprob <= 0


def test_open_stream_and_infer_interleave_in_one_thread(model):
    expected = model.infer(PROMPT, **GREEDY).text
    stream = model.stream(PROMPT, **GREEDY)
    first = next(stream)
    assert model.infer(PROMPT, **GREEDY).text == expected  # no deadlock, no interference
    assert first + "".join(stream) == expected


def test_stream_checks_the_request_before_the_first_token(smollm2_auto_mcp):
    config = RuntimeConfig(device="cpu", max_context=32)
    with Session(config) as session:
        small = session.load_model(smollm2_auto_mcp)
        with pytest.raises(ContextLengthError):
            small.stream("word " * 50, raw=True)  # raised by the call, not by next()
        with pytest.raises(InvalidRequestError, match="max_tokens"):
            small.stream("hi", max_tokens=0)


def test_catalog_name_is_pulled_into_the_cache_on_first_load(smollm2_gguf, tmp_path):
    sources = tmp_path / "cache" / "sources"
    sources.mkdir(parents=True)
    shutil.copyfile(smollm2_gguf, sources / smollm2_gguf.name)  # as a previous download left it
    config = RuntimeConfig(device="cpu", model_dir=tmp_path, cache_dir=tmp_path / "cache")
    with Session(config) as session:
        model = session.load_model("smollm2-135m-instruct.mcp")
        assert model.path == tmp_path / "cache" / "models" / "smollm2-135m-instruct.mcp"
        assert model.name == "smollm2-135m-instruct"
        assert "Paris" in model.infer("The capital of France is", raw=True, **GREEDY).text


def test_threads_share_a_model(model):
    expected = model.infer(PROMPT, **GREEDY).token_ids
    results, errors = [], []

    def work():
        try:
            results.append(model.infer(PROMPT, **GREEDY).token_ids)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and results == [expected] * 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -3}, "max_tokens"),
        ({"temperature": -0.5}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"stop": ["ok", "\udcff"]}, "stop[1] is not valid UTF-8"),
        ({"temprature": 0.1}, "unknown argument(s) temprature"),
    ],
)
def test_bad_arguments_are_typed_errors(model, kwargs, message):
    with pytest.raises(InvalidRequestError) as info:
        model.infer(PROMPT, **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("prompt", [None, 42, b"bytes", ["a list"]])
def test_non_string_prompt_is_rejected(model, prompt):
    with pytest.raises(InvalidRequestError, match="prompt must be a string"):
        model.infer(prompt)


def test_prompt_longer_than_context(smollm2_auto_mcp):
    config = RuntimeConfig(model_dir=smollm2_auto_mcp.parent, device="cpu", max_context=64)
    with Session(config) as session:
        small = session.load_model(smollm2_auto_mcp)
        assert small.max_context == 64
        with pytest.raises(ContextLengthError, match="prompt has .* tokens but the context holds 64"):
            small.infer("word " * 100, raw=True)
        # the model keeps serving after the refusal
        assert small.infer("Hello", raw=True, max_tokens=2, temperature=0.0).usage.completion_tokens == 2


def test_missing_and_corrupt_model_files(session, smollm2_mcp, smollm2_gguf, tmp_path):
    with pytest.raises(ModelNotFoundError, match="not found"):
        session.load_model(tmp_path / "absent.mcp")
    truncated = tmp_path / "truncated.mcp"
    with open(smollm2_mcp, "rb") as src:
        truncated.write_bytes(src.read(1_000_000))
    with pytest.raises(ModelFormatError, match="truncated"):
        session.load_model(truncated)
    gguf_copy = tmp_path / "model.gguf"
    shutil.copyfile(smollm2_gguf, gguf_copy)
    with pytest.raises(ModelFormatError, match="mcp2026 compile"):
        session.load_model(gguf_copy)


def test_flipped_byte_caught_by_verify(session, smollm2_mcp, tmp_path):
    flipped = tmp_path / "flipped.mcp"
    data = bytearray(smollm2_mcp.read_bytes())
    data[-1000] ^= 0x40
    flipped.write_bytes(data)
    with pytest.raises(ModelFormatError, match="sha256"):
        session.load_model(flipped, verify=True, name="flipped")


def test_unload_then_use_is_an_error(smollm2_auto_mcp):
    with Session(RuntimeConfig(device="cpu")) as session:
        model = session.load_model(smollm2_auto_mcp, name="temp")
        with pytest.raises(ConfigError, match="already loaded"):
            session.load_model(smollm2_auto_mcp, name="temp")
        session.unload_model(model)
        assert session.models == {}
        with pytest.raises(InvalidRequestError, match="unloaded"):
            model.infer("Hi")
        with pytest.raises(ModelNotFoundError):
            session.unload_model("temp")
