"""An upstream that refuses with 429 (its tenant's rate limit, reached with the pool's API key):
the gateway falls back on over_capacity where the route says so, and otherwise answers 429
with the upstream's Retry-After."""

from __future__ import annotations

import httpx
import pytest

from gateway_process import FREE_KEY
from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
UPSTREAM_KEY = "upstream-key-for-the-gateway"


def test_over_capacity_falls_back_or_is_a_429(start_server, start_gateway, tiny_mcp, upstreams):
    limited = start_server({"serving": {
        "models": [{"name": "tiny", "source": str(tiny_mcp), "version": "1"}],
        "tenants": [{"name": "gateway", "key_sha256": [hash_key(UPSTREAM_KEY)], "requests_per_minute": 2}]}})
    pools = {"limited": {"members": [{"name": "limited", "url": limited.url}], "api_key_env": "MCP_TEST_UPSTREAM_KEY"},
             "a": {"members": [{"name": "stable", "url": upstreams["stable"].url}]}}
    rules = {"routes": [{"name": "patient", "conditions": {"model": "patient"},
                         "backend": {"model_id": "tiny:1", "instance_pool": "limited"},
                         "fallbacks": [{"when": "over_capacity", "backend": {"model_id": "tiny:1", "instance_pool": "a"}}]}],
             "default": {"backend": {"model_id": "tiny:1", "instance_pool": "limited"}}}
    gateway = start_gateway({"pools": pools}, rules, env={"MCP_TEST_UPSTREAM_KEY": UPSTREAM_KEY})

    def send(model: str) -> httpx.Response:
        return httpx.post(gateway.url + "/v1/completions", headers={"authorization": f"Bearer {FREE_KEY}"}, timeout=30,
                          json={"model": model, "prompt": "hi", "max_tokens": 1})

    served = [send("any") for _ in range(2)]  # the key reaches the upstream: its 2 requests a minute
    assert [(r.status_code, r.headers["x-mcp-member"]) for r in served] == [(200, "limited")] * 2
    refused = send("any")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    error = refused.json()["error"]
    assert error["code"] == "over_capacity" and "pool 'limited': all 1 attempt(s) failed (limited)" in error["message"]
    rescued = send("patient")
    assert rescued.status_code == 200
    assert (rescued.headers["x-mcp-fallback"], rescued.headers["x-mcp-member"]) == ("over_capacity", "stable")
    members = httpx.get(gateway.url + "/health").json()["pools"]["limited"]["members"]
    assert members[0]["breaker"] == "closed"  # busy is not broken
