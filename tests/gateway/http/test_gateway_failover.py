"""Killing one instance of a pool mid-load: no request that had not started streaming is lost,
the gateway retries it on the other member, and the dead member's breaker opens."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from gateway_process import ADMIN_KEY, FREE_KEY, error_events

pytestmark = pytest.mark.slow
RULES = {"version": 1, "default": {"backend": {"model_id": "tiny:1", "instance_pool": "pair"}}}


async def _load(url: str, kill, num_plain: int = 100, num_streams: int = 24) -> tuple[list, list]:
    """Plain and streamed requests, 12 at a time; ``kill`` runs once 25 have finished."""
    plain, streams, done = [], [], 0
    limit = asyncio.Semaphore(12)
    async with httpx.AsyncClient(base_url=url, timeout=60, headers={"authorization": f"Bearer {FREE_KEY}"}) as client:
        async def finished() -> None:
            nonlocal done
            done += 1
            if done == 25:
                kill()

        async def one_plain(i: int) -> None:
            async with limit:
                r = await client.post("/v1/completions", json={"prompt": f"hi {i}", "max_tokens": 4})
                plain.append((r.status_code, r.headers.get("x-mcp-attempts"), r.text))
                await finished()

        async def one_stream(i: int) -> None:
            async with limit:
                events = []
                async with client.stream("POST", "/v1/completions",
                                         json={"prompt": f"hi {i}", "max_tokens": 12, "stream": True}) as r:
                    status = r.status_code
                    async for line in r.aiter_lines():
                        if line.startswith("data: "):
                            events.append(line.removeprefix("data: "))
                streams.append((status, events))
                await finished()

        jobs = [one_plain(i) for i in range(num_plain)] + [one_stream(i) for i in range(num_streams)]
        await asyncio.gather(*jobs[::2], *jobs[1::2])
    return plain, streams


def test_killing_a_member_mid_load_loses_no_unstarted_request_and_opens_its_breaker(start_gateway, pools, upstreams):
    gateway = start_gateway({"pools": pools}, RULES)
    doomed = upstreams["doomed"]
    plain, streams = asyncio.run(_load(gateway.url, doomed.process.kill))
    assert doomed.process.poll() is not None  # it really died mid-load

    assert len(plain) == 100 and all(status == 200 for status, _, _ in plain), [p for p in plain if p[0] != 200][:3]
    assert any(int(attempts) > 1 for _, attempts, _ in plain)  # some were retried on the live member
    for status, events in streams:
        assert status == 200 and events[-1] == "[DONE]"
        errors = error_events(events)
        if errors:  # broken off by the kill: only ever after events had already gone out
            assert json.loads(events[errors[0]])["error"]["code"] == "upstream_broken" and errors[0] >= 1
    assert sum(1 for _, events in streams if not error_events(events)) >= 16

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        members = {m["name"]: m for m in httpx.get(gateway.url + "/admin/pools",
                                                   headers={"authorization": f"Bearer {ADMIN_KEY}"}).json()["pair"]["members"]}
        if members["doomed"]["breaker"] == "open":
            break
        time.sleep(0.2)
    assert (members["doomed"]["breaker"], members["doomed"]["healthy"]) == ("open", False)
    assert members["stable"]["breaker"] == "closed"
    metrics = httpx.get(gateway.url + "/metrics").text
    assert 'mcp_gateway_breaker_state{member="doomed",pool="pair"} 2.0' in metrics
    assert 'mcp_gateway_retries_total{pool="pair",reason="error"}' in metrics
    after = httpx.post(gateway.url + "/v1/completions", json={"prompt": "still there?", "max_tokens": 1},
                       headers={"authorization": f"Bearer {FREE_KEY}"}, timeout=30)
    assert (after.status_code, after.headers["x-mcp-member"]) == (200, "stable")
    assert json.loads(after.text)["model"] == "tiny:1"
