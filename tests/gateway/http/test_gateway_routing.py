"""Requests through a real gateway process to real ``mcp2026 serve`` upstreams: each rule kind,
fallbacks on error and timeout, split ratios over 1,200 users, sticky users, SSE passthrough,
the official openai client, and bad input answered clearly while the gateway keeps serving."""

from __future__ import annotations

import asyncio
import collections
import math

import httpx
import openai
import pytest

from gateway_process import ACME_KEY, ADMIN_KEY, FREE_KEY

pytestmark = pytest.mark.slow


def _backend(model_id: str, pool: str, **extra) -> dict:
    return {"model_id": model_id, "instance_pool": pool, **extra}


RULES = {
    "version": 1,
    "routes": [
        {"name": "acme", "conditions": {"tenant": "acme"}, "backend": _backend("tiny:2", "b")},
        {"name": "premium", "conditions": {"user_tier": "premium"}, "backend": _backend("tiny:2", "b")},
        {"name": "critical", "conditions": {"sla_class": ["critical"]}, "backend": _backend("tiny:2", "b")},
        {"name": "long-prompt", "conditions": {"min_input_tokens": 200}, "backend": _backend("tiny:2", "b")},
        {"name": "eu", "conditions": {"headers": {"X-Region": "eu-*"}}, "backend": _backend("tiny:2", "b")},
        {"name": "search", "conditions": {"metadata": {"team": "search"}}, "backend": _backend("tiny:2", "b")},
        {"name": "broken", "conditions": {"model": "broken"}, "backend": _backend("tiny:1", "dead"),
         "fallbacks": [{"when": "error", "backend": _backend("tiny:2", "b")}]},
        {"name": "impatient", "conditions": {"model": "impatient"}, "backend": _backend("tiny:3", "slow", timeout_ms=300),
         "fallbacks": [{"when": ["timeout"], "backend": _backend("tiny:1", "a")}]},
        {"name": "ab", "conditions": {"model": "ab-test"},
         "split": {"arms": [{"name": "stable", "weight": 70, "backend": _backend("tiny:1", "a")},
                            {"name": "canary", "weight": 30, "backend": _backend("tiny:2", "b")}]}},
    ],
    "default": {"backend": _backend("tiny:1", "a")},
}


@pytest.fixture(scope="module")
def gateway(start_gateway, pools):
    return start_gateway({"pools": pools}, RULES)


def _chat(gateway, key: str = FREE_KEY, content: str = "hi", headers: dict | None = None, **body) -> httpx.Response:
    payload = {"messages": [{"role": "user", "content": content}], "max_tokens": 2, **body}
    return httpx.post(gateway.url + "/v1/chat/completions", json=payload, timeout=30,
                      headers={"authorization": f"Bearer {key}", **(headers or {})})


@pytest.mark.parametrize("route, request_args", [
    ("acme", {"key": ACME_KEY}),
    ("premium", {"headers": {"x-user-tier": "premium"}}),
    ("critical", {"headers": {"x-sla-class": "critical"}}),
    ("long-prompt", {"content": "word " * 200}),  # 1,000 characters: about 250 tokens
    ("eu", {"headers": {"x-region": "eu-west"}}),
    ("search", {"metadata": {"team": "search"}}),
])
def test_each_rule_kind_sends_to_its_backend(gateway, route, request_args):
    response = _chat(gateway, **request_args)
    assert response.status_code == 200, response.text
    assert (response.headers["x-mcp-route"], response.headers["x-mcp-pool"]) == (route, "b")
    assert response.json()["model"] == "tiny:2"  # answered by the canary upstream, the only one serving tiny:2


def test_unmatched_requests_take_the_default(gateway):
    response = _chat(gateway, headers={"x-region": "us-east", "x-sla-class": "low"})
    assert (response.headers["x-mcp-route"], response.json()["model"]) == ("default", "tiny:1")


def test_a_dead_pool_falls_back_on_error(gateway):
    response = _chat(gateway, model="broken")
    assert response.status_code == 200
    assert (response.headers["x-mcp-fallback"], response.headers["x-mcp-pool"]) == ("error", "b")
    assert response.json()["model"] == "tiny:2"


def test_a_slow_backend_falls_back_on_timeout(gateway):
    response = _chat(gateway, model="impatient")
    assert response.status_code == 200
    assert (response.headers["x-mcp-fallback"], response.json()["model"]) == ("timeout", "tiny:1")


def test_split_ratio_is_within_binomial_tolerance_over_1200_users(gateway):
    """1,200 users through the gateway's resolve-and-pick path (``/admin/route``: the router and
    the pool as a request meets them, nothing sent upstream, so 2 cores finish in seconds)."""
    async def arms() -> dict[str, str]:
        limit = asyncio.Semaphore(8)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=60, headers=_auth(ADMIN_KEY)) as client:
            async def one(user: str) -> tuple[str, str]:
                async with limit:
                    r = await client.post("/admin/route", params={"api": "completions"},
                                          json={"model": "ab-test", "prompt": "hi", "user": user})
                decision = r.json()
                assert decision["pool"] == {"stable": "a", "canary": "b"}[decision["arm"]]
                return user, decision["arm"]
            return dict(await asyncio.gather(*(one(f"user-{i}") for i in range(1200))))

    chosen = asyncio.run(arms())
    num_canary = sum(arm == "canary" for arm in chosen.values())
    n, p = len(chosen), 0.30
    assert abs(num_canary - n * p) <= 4 * math.sqrt(n * p * (1 - p)), num_canary


def test_sticky_users_stay_on_their_arm_and_are_served_by_it(gateway):
    async def run() -> dict[str, collections.Counter]:
        seen: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        limit = asyncio.Semaphore(6)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=60, headers=_auth()) as client:
            async def one(user: str) -> None:
                async with limit:
                    r = await client.post("/v1/completions", json={"model": "ab-test", "prompt": "hi", "max_tokens": 1,
                                                                   "user": user})
                assert r.status_code == 200, r.text
                arm = r.headers["x-mcp-arm"]
                assert r.json()["model"] == {"stable": "tiny:1", "canary": "tiny:2"}[arm]  # the arm's upstream answered
                seen[user][arm] += 1
            await asyncio.gather(*(one(f"user-{i % 40}") for i in range(120)))  # 40 users, 3 requests each
        return seen

    seen = asyncio.run(run())
    assert len(seen) == 40 and all(sum(arms.values()) == 3 and len(arms) == 1 for arms in seen.values())
    assert {arm for arms in seen.values() for arm in arms} == {"stable", "canary"}


def test_route_explain_over_the_admin_api_names_route_arm_pool_and_member(gateway):
    r = httpx.post(gateway.url + "/admin/route", headers={**_auth(ADMIN_KEY), "x-user-tier": "premium"},
                   json={"messages": [{"role": "user", "content": "hi"}]})
    assert r.json() | {"table_sha256": None} == {
        "route": "premium", "arm": None, "model": "tiny:2", "pool": "b", "member": "canary", "input_tokens": 1,
        "is_default": False, "fallbacks": [], "table_sha256": None}


def test_streams_pass_through_as_server_sent_events(gateway):
    with httpx.stream("POST", gateway.url + "/v1/completions", timeout=30,
                      headers={"authorization": f"Bearer {FREE_KEY}"},
                      json={"prompt": "hi", "max_tokens": 3, "stream": True}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]" and len(events) >= 2
    assert '"model":"tiny:1"' in events[0]


def test_the_official_openai_client_works_through_the_gateway(gateway):
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=ACME_KEY)
    raw = client.chat.completions.with_raw_response.create(
        model="anything", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert raw.headers["x-mcp-route"] == "acme" and raw.parse().model == "tiny:2"
    chunks = list(client.completions.create(model="x", prompt="hi", max_tokens=3, stream=True))
    assert chunks and all(c.model == "tiny:2" for c in chunks)
    assert {m.id for m in client.models.list()} >= {"tiny:1", "tiny:2", "tiny:3"}


def test_tool_turns_and_ignored_fields_pass_through(gateway):
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    messages = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "7 C"}]
    reply = httpx.post(gateway.url + "/v1/chat/completions", timeout=30, headers=_auth(),
                       json={"messages": messages, "tools": [tool], "max_tokens": 2, "store": False})
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-mcp-ignored-fields"] == "store" and reply.headers["x-mcp-route"]


@pytest.mark.parametrize("send, status, text", [
    (lambda url: httpx.post(url + "/v1/chat/completions", content=b"{not json", headers=_auth()), 400,
     "the request body is not valid JSON"),
    (lambda url: httpx.post(url + "/v1/chat/completions", json={"model": "x"}, headers=_auth()), 400,
     "field messages: give a non-empty list"),
    (lambda url: httpx.post(url + "/v1/completions", json={"prompt": 5}, headers=_auth()), 400,
     "field prompt: give a string or a list of strings"),
    (lambda url: httpx.post(url + "/v1/completions", json={"prompt": "hi"}, headers={**_auth(), "x-sla-class": "vip"}),
     400, "header x-sla-class: 'vip' is not one of critical, high, medium, low"),
    (lambda url: httpx.post(url + "/v1/completions", json={"prompt": "hi", "metadata": {"team": 3}}, headers=_auth()),
     400, "field metadata: must be an object of string values"),
    (lambda url: httpx.post(url + "/v1/completions", json={"prompt": "hi"}, headers={"authorization": "Bearer nope"}),
     401, "the API key matches no tenant"),
    (lambda url: httpx.post(url + "/v1/completions", content=b"x" * ((1 << 20) + 1), headers=_auth()), 413,
     "the request body is over 1048576 bytes (gateway.max_body_bytes)"),
    (lambda url: httpx.get(url + "/admin/pools", headers=_auth()), 403, "may not use the admin endpoints"),
    (lambda url: httpx.get(url + "/admin/rollouts/1", headers=_auth(ADMIN_KEY)), 409, "this gateway has no registry"),
])
def test_bad_requests_get_clear_errors_and_the_gateway_keeps_serving(gateway, send, status, text):
    response = send(gateway.url)
    assert response.status_code == status, response.text
    assert text in response.json()["error"]["message"]
    assert _chat(gateway).status_code == 200


def test_metrics_count_decisions_latency_and_breakers(gateway):
    _chat(gateway, model="broken")
    text = httpx.get(gateway.url + "/metrics").text
    assert 'mcp_gateway_route_decisions_total{arm="",route="broken"}' in text
    assert 'mcp_gateway_fallbacks_total{reason="error",route="broken"}' in text
    assert 'mcp_gateway_upstream_latency_seconds_count{member="canary",pool="b"}' in text
    assert 'mcp_gateway_breaker_state{member="nobody",pool="dead"} 2.0' in text


def _auth(key: str = FREE_KEY) -> dict:
    return {"authorization": f"Bearer {key}"}
