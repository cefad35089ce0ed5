"""The native backend generates on the path users are served by: the SDK's Model and its engine loop.

``mcp2026 check consistency --engines native-...`` is only worth running if what it measures is
what a Session (and so the server) runs: these tests load the backend and a Session side by
side on the real model and compare tokens, precision plans, and the loop's own counters.
"""

from __future__ import annotations

import pytest

from mcp.backends.base import GenerationParams, Prompt
from mcp.backends.native import NativeBackend, native_options
from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import RuntimeConfig
from mcp.engine.loop import EngineLoop
from mcp.runtime import Session

TEXT = "The three primary colours are"


@pytest.fixture(scope="module")
def fp32_backend(smollm2_mcp):
    backend = NativeBackend(smollm2_mcp, native_options("fp32"), name="native-fp32")
    backend.load()
    yield backend
    backend.unload()


def _prompt(backend: NativeBackend, text: str) -> Prompt:
    ids = backend.engine.tokenizer.encode(text)
    return Prompt(tuple(ids), text)


def test_generate_runs_on_the_models_engine_loop_and_fires_its_hooks(fp32_backend):
    assert isinstance(fp32_backend.model.loop, EngineLoop)
    events = []
    handle = fp32_backend.model.add_hook("on_token_generated", events.append)
    try:
        finished_before = fp32_backend.model.loop.stats().num_finished
        result = fp32_backend.generate(_prompt(fp32_backend, TEXT), GenerationParams(max_tokens=6))
    finally:
        handle.remove()
    assert len(result.token_ids) == 6
    assert tuple(event.token_id for event in events) == result.token_ids  # each token came off the loop
    stats = fp32_backend.model.loop.stats()
    assert stats.num_finished == finished_before + 1 and stats.num_steps >= 6


def test_generate_gives_what_a_session_model_gives_with_the_same_plan(fp32_backend, smollm2_mcp):
    config = RuntimeConfig(model_dir=smollm2_mcp.parent, device="cpu", precision="fp32")
    with Session(config) as session:
        served = session.load_model(smollm2_mcp.name)
        want = served.infer(TEXT, raw=True, max_tokens=12, temperature=0.0, ignore_eos=True)
        assert fp32_backend.engine.precision == served.precision  # the same kernels, the same step
        assert fp32_backend.engine.plan.decode_step == served.engine.plan.decode_step
    got = fp32_backend.generate(_prompt(fp32_backend, TEXT), GenerationParams(max_tokens=12))
    assert got.token_ids == want.token_ids
    assert got.text == want.text


def test_top_logprobs_come_from_the_loop_with_token_ids(fp32_backend):
    result = fp32_backend.generate(_prompt(fp32_backend, TEXT), GenerationParams(max_tokens=3, top_logprobs=4))
    assert len(result.top_logprobs) == 3
    for token_id, top in zip(result.token_ids, result.top_logprobs):
        assert len(top.token_ids) == 4 and top.token_ids[0] == token_id  # greedy: the most probable
        assert list(top.logprobs) == sorted(top.logprobs, reverse=True)


def test_a_prompt_past_the_context_is_refused_and_the_backend_keeps_generating(fp32_backend):
    too_long = Prompt(tuple([1] * (fp32_backend.engine.max_context + 1)), "")
    with pytest.raises(InvalidRequestError, match="context"):
        fp32_backend.generate(too_long, GenerationParams(max_tokens=2))
    assert len(fp32_backend.generate(_prompt(fp32_backend, TEXT), GenerationParams(max_tokens=2)).token_ids) == 2


def test_unload_closes_the_loop(smollm2_mcp):
    backend = NativeBackend(smollm2_mcp, native_options("fp32"))
    backend.load()
    loop = backend.model.loop
    backend.unload()
    assert loop.closed and backend.model is None and not backend.health().ok
