"""The lifecycle both transports drive (serving/reply.py), on a real host with the tiny model in
this process: a whole answer, events, and one end however it comes (the version released once,
the tenant's tokens counted once, what still runs cancelled)."""

from __future__ import annotations

import asyncio

import pytest

from mcp.base.errors import ModelNotFoundError
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig, Tenant
from mcp.runtime.session import Session
from mcp.serving.errors import RateLimitedError
from mcp.serving.host import ModelHost
from mcp.serving.reply import Reply
from mcp.serving.request import Prompt, Sampling, ServingRequest
from mcp.serving.state import ServerState
from mcp.serving.tenants import TenantDirectory

TENANT = Tenant("acme", (), tokens_per_minute=1000)


@pytest.fixture
def state(tiny_mcp):
    serving = ServingConfig(isolation="none")
    config = RuntimeConfig(device="cpu", num_threads=1, serving=serving)
    session = Session(config)
    host = ModelHost(session)
    host.load(ServedModel("tiny", str(tiny_mcp)))
    yield ServerState(config, host, TenantDirectory(serving.tenants))
    host.close()
    session.close()


def _request(**fields) -> ServingRequest:
    base = {"request_id": "cmpl-1", "route": "POST /v1/completions", "chat": False, "tenant": TENANT.name,
            "prompts": (Prompt(text="a b"), Prompt(text="c")), "n": 2,
            "sampling": Sampling(max_tokens=5, temperature=1.0, seed=7, ignore_eos=True, logprobs=1)}
    return ServingRequest(**{**base, **fields})


def test_a_whole_answer_has_every_choice_and_ends_once(state):
    async def run():
        reply = await Reply.start(state, TENANT, _request())
        assert reply.version.in_flight == 1 and reply.num_choices == 4
        results, steps = await reply.whole()
        reply.finish()
        reply.finish()  # a second end changes nothing
        return reply, results, steps

    reply, results, steps = asyncio.run(run())
    assert [r.usage.completion_tokens for r in results] == [5, 5, 5, 5]
    assert [len(s) for s in steps] == [5, 5, 5, 5] and all(len(s.top_logprobs) == 1 for s in steps[0])
    assert results[0].token_ids != results[1].token_ids  # choice j samples with seed + j
    assert reply.version.in_flight == 0 and reply.decode is not None
    used = sum(r.usage.total_tokens for r in results)
    with pytest.raises(RateLimitedError, match=f"used {used} of its {used} tokens"):  # counted once, not twice
        state.limiter.admit(Tenant("acme", (), tokens_per_minute=used))


def test_a_reply_ended_mid_stream_cancels_its_choices_and_releases_the_version(state):
    async def run():
        reply = await Reply.start(state, TENANT, _request(n=1, prompts=(Prompt(text="a"),),
                                                          sampling=Sampling(max_tokens=200, ignore_eos=True)))
        events = reply.events()
        first = await anext(events)
        reply.finish()  # the client went away
        rest = [event async for event in events]
        return reply, first, rest

    reply, first, rest = asyncio.run(run())
    assert first.step is not None and reply.version.in_flight == 0
    assert rest[-1].result is not None and rest[-1].result.finish_reason == "cancelled"
    assert len(rest[-1].result.token_ids) < 200


def test_a_request_the_host_cannot_serve_holds_nothing(state):
    async def run():
        await Reply.start(state, TENANT, _request(model="nope"))

    with pytest.raises(ModelNotFoundError, match="'nope' does not exist"):
        asyncio.run(run())
    assert all(v.in_flight == 0 for v in state.host.versions())
