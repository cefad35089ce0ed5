"""A pool member that is a model loaded in the gateway's own process, beside a remote one."""

from __future__ import annotations

import httpx
import pytest

from gateway_process import FREE_KEY

pytestmark = pytest.mark.slow


def test_a_local_member_serves_in_the_gateways_process(start_gateway, upstreams, tiny_mcp):
    pools = {"mixed": {"members": [{"name": "here", "local": [{"name": "tiny", "source": str(tiny_mcp), "version": "7"}]}]},
             "remote": {"members": [{"name": "stable", "url": upstreams["stable"].url}]}}
    rules = {"routes": [{"name": "remote", "conditions": {"model": "remote"},
                         "backend": {"model_id": "tiny:1", "instance_pool": "remote"}}],
             "default": {"backend": {"model_id": "tiny:7", "instance_pool": "mixed"}}}
    gateway = start_gateway({"pools": pools}, rules)
    headers = {"authorization": f"Bearer {FREE_KEY}"}
    local = httpx.post(gateway.url + "/v1/chat/completions", headers=headers, timeout=30,
                       json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert local.status_code == 200, local.text
    assert (local.headers["x-mcp-member"], local.json()["model"]) == ("here", "tiny:7")
    with httpx.stream("POST", gateway.url + "/v1/completions", headers=headers, timeout=30,
                      json={"prompt": "hi", "max_tokens": 3, "stream": True}) as response:
        events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]" and '"model":"tiny:7"' in events[0]
    remote = httpx.post(gateway.url + "/v1/completions", headers=headers, timeout=30,
                        json={"model": "remote", "prompt": "hi", "max_tokens": 1})
    assert remote.json()["model"] == "tiny:1"
    pools_seen = httpx.get(gateway.url + "/health").json()["pools"]
    assert pools_seen["mixed"]["members"][0] | {"requests": 0} == {
        "name": "here", "url": "http://here.local", "local": True, "healthy": True, "breaker": "closed",
        "breaker_opened": 0, "outstanding": 0, "requests": 0, "failures": 0, "last_error": None}
