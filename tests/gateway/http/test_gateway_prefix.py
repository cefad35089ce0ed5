"""Prefix-aware picking end to end: three real ``mcp2026 serve`` members behind a real
``mcp2026 gateway`` with ``picking: prefix``; chat requests that share a system prompt land on
one member (``x-mcp-member``), which then finds the prompt in its prefix cache
(``vllm:prefix_cache_hits_total``), and different system prompts spread over the members."""

from __future__ import annotations

import httpx
import pytest

from gateway_process import FREE_KEY

pytestmark = pytest.mark.slow
RULES = {"version": 1, "default": {"backend": {"model_id": "tiny:1", "instance_pool": "trio"}}}


@pytest.fixture(scope="module")
def trio(start_server, tiny_mcp) -> dict:
    return {f"m{i}": start_server({"serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}]}})
            for i in range(3)}


def hits(server) -> float:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:prefix_cache_hits_total{"))


def test_a_shared_system_prompt_stays_on_one_member_and_hits_its_cache(start_gateway, trio):
    pool = {"members": [{"name": name, "url": server.url} for name, server in trio.items()],
            "picking": "prefix", "prefix": {"block_chars": 64}}
    gateway = start_gateway({"pools": {"trio": pool}}, RULES)
    homes = {}
    with httpx.Client(base_url=gateway.url, timeout=60, headers={"authorization": f"Bearer {FREE_KEY}"}) as client:
        for desk in range(8):
            system = f"You are help desk number {desk} of a shipping company; answer briefly and politely."
            members = []
            before = {name: hits(server) for name, server in trio.items()}
            for question in ("Where is my parcel?", "Can I change the address?", "Do you ship abroad?"):
                reply = client.post("/v1/chat/completions", json={
                    "model": "tiny", "max_tokens": 2, "messages": [{"role": "system", "content": system},
                                                                 {"role": "user", "content": question}]})
                assert reply.status_code == 200, reply.text
                members.append(reply.headers["x-mcp-member"])
            assert len(set(members)) == 1, members
            homes[desk] = members[0]
            home = trio[members[0]]
            assert hits(home) - before[members[0]] >= 2 * 16  # the 2nd and 3rd found the prompt's first block
    assert len(set(homes.values())) >= 2, homes


def test_short_prompts_are_spread_by_load(start_gateway, trio):
    pool = {"members": [{"name": name, "url": server.url} for name, server in trio.items()],
            "picking": "prefix", "prefix": {"block_chars": 4096}}
    gateway = start_gateway({"pools": {"trio": pool}}, RULES)
    with httpx.Client(base_url=gateway.url, timeout=60, headers={"authorization": f"Bearer {FREE_KEY}"}) as client:
        members = {client.post("/v1/completions", json={"model": "tiny", "prompt": "Hi", "max_tokens": 1})
                   .headers["x-mcp-member"] for _ in range(6)}
    assert members == set(trio)
