"""Three ``mcp2026 serve`` hosts and a ``mcp2026 gateway`` on hosts of their own: network
namespaces this test makes (``netns.py``), each with its own address on a bridge, serving the
real default model. A host's link goes down under load and comes back.

What it proves, against the gateway's own view (its log and ``/admin/pools``):
- no request is lost: every one answers 200; a request the gateway had not started on the cut
  host (its connect fails) is retried on another member and answers from there; one already
  sent there waits for the link (TCP delivers it when it is back), and a stream already passing
  events on may only end with an error event after them, as when a member is killed;
- failover is bounded by the health checks, not by luck: the gateway marks a member down at its
  first failed check; a check starts at most ``interval_s`` after the last one ended and fails
  within ``timeout_s``, and one in flight at the cut may take its whole ``timeout_s`` too, so the
  member is down at most ``interval_s + 2 * timeout_s`` after the cut (plus MARGIN_S for a busy
  event loop); from then on no new request goes to it; its breaker opens after
  ``failure_threshold`` failures, and closes once the link is back and a trial request succeeds;
- the canary and the breaker behave as on loopback (test_gateway_failover.py,
  test_gateway_canary.py): a canary whose host is cut off rolls back on its own while the
  route's fallback answers its users, and a healthy one walks 20 -> 50 -> 100% into production.

Skipped only where the kernel refuses ``ip netns add`` (root or CAP_NET_ADMIN are needed).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from datetime import datetime

import httpx
import pytest

import netns
from gateway_process import ADMIN, FREE_KEY, GatewayProcess, arms_served, error_events, traffic_until_rollout_ends
from mcp.gateway.pools.prefix import prefix_key, rendezvous_order
from mcp.gateway.registry.artifacts import read_artifact
from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage
from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
HOSTS = {"gw": 10, "h1": 11, "h2": 12, "h3": 13}
UPSTREAM_KEY = "multihost-upstream-key"  # the gateway's key on the hosts, which refuse anyone else
HEALTH = {"interval_s": 1.0, "timeout_s": 2.0}
BREAKER = {"failure_threshold": 3, "cool_down_s": 2.0}
MARGIN_S = 2.0  # the gateway's event loop and the admin polls on two cores that other suites keep busy
FAILOVER_BOUND_S = HEALTH["interval_s"] + 2 * HEALTH["timeout_s"] + MARGIN_S
BREAKER_BOUND_S = (BREAKER["failure_threshold"] * HEALTH["interval_s"]
                   + (BREAKER["failure_threshold"] + 1) * HEALTH["timeout_s"] + MARGIN_S)
RECOVERY_BOUND_S = HEALTH["interval_s"] + 2 * HEALTH["timeout_s"] + MARGIN_S
BLOCK_CHARS = 32
AFFINE_HEALTH = {"interval_s": 3600, "timeout_s": 1.0}  # one check, at start
USER = {"authorization": f"Bearer {FREE_KEY}"}


TIMEOUT_MS = 120_000  # a request's deadline: generous, a busy machine is not what is tested
STABLE = {"model_id": "smol:1", "instance_pool": "main", "timeout_ms": TIMEOUT_MS}


def _split(canary_timeout_ms: int) -> dict:
    canary = {"model_id": "smol:2", "instance_pool": "canary", "timeout_ms": canary_timeout_ms}
    return {"split": {"arms": [{"name": "stable", "weight": 100, "backend": STABLE},
                               {"name": "canary", "weight": 0, "backend": canary}]},
            "fallbacks": [{"when": ["error", "timeout"], "backend": STABLE}]}


RULES = {"version": 1, "routes": [
    {"name": "affine", "conditions": {"model": "affine"},
     "backend": {"model_id": "smol:1", "instance_pool": "affine", "timeout_ms": TIMEOUT_MS}},
    {"name": "canary-direct", "conditions": {"model": "canary-direct"},
     "backend": {"model_id": "smol:2", "instance_pool": "canary", "timeout_ms": TIMEOUT_MS}},
    # a request stuck on a kept-alive connection to the cut canary falls back after 10 s
    {"name": "cut-rollout", "conditions": {"model": "bot-cut"}, **_split(10_000)},
    {"name": "good-rollout", "conditions": {"model": "bot-good"}, **_split(50_000)},
], "default": {"backend": STABLE}}


@pytest.fixture(scope="module")
def network():
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(reason)
    with netns.Network(HOSTS) as made:
        yield made


@pytest.fixture(scope="module")
def hosts(network, start_server, smollm2_auto_mcp) -> dict:
    """h1 and h2 serve smol:1, h3 smol:2 (the canary); each bound to all of its addresses. Stopped
    here, before the network goes (which would kill them anyway)."""
    started = {}
    try:
        for name, version in (("h1", "1"), ("h2", "1"), ("h3", "2")):
            config = {"serving": {"models": [{"name": "smol", "source": str(smollm2_auto_mcp), "version": version}],
                                  "tenants": [{"name": "gateway", "key_sha256": [hash_key(UPSTREAM_KEY)]}],
                                  "worker": {"spare_workers": 0}, "console": False},
                      "runtime": {"device": "cpu", "num_threads": 1, "max_context": 512}}
            started[name] = start_server(config, launcher=tuple(network.command(name)), host="0.0.0.0",
                                         address=network.address(name))
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def gateway(network, hosts, smollm2_auto_mcp, tmp_path_factory):
    registry_url = f"sqlite:///{tmp_path_factory.mktemp('registry') / 'registry.db'}"
    artifact = read_artifact(smollm2_auto_mcp)
    with Registry.open(registry_url, actor="tester") as registry:
        registry.register(artifact, "smol", "1", Stage.PRODUCTION)
        registry.register(artifact, "smol", "2")

    def member(name: str, second: bool = False) -> dict:
        return {"name": name, "url": f"http://{network.address(name, second)}:{hosts[name].port}"}

    common = {"api_key_env": "MCP_UPSTREAM_KEY", "connect_timeout_s": 1.0}
    pools = {"main": {"members": [member("h1"), member("h2")], "health": HEALTH, "breaker": BREAKER, **common},
             "canary": {"members": [member("h3")], "health": HEALTH, "breaker": BREAKER, **common},
             # the same hosts by their second addresses, so that no kept-alive connection of the main
             # pool is reused: its first request to a cut host has to connect. Its health is checked
             # once, at start: it learns of the cut from its requests alone.
             "affine": {"members": [member("h1", True), member("h2", True)], "picking": "prefix",
                        "prefix": {"block_chars": BLOCK_CHARS}, "health": AFFINE_HEALTH,
                        "breaker": {**BREAKER, "cool_down_s": 3600}, **common}}
    started = GatewayProcess({"gateway": {"registry": registry_url}, "canary": {"interval_s": 0.3}, "pools": pools},
                             RULES, tmp_path_factory.mktemp("gateway"), env={"MCP_UPSTREAM_KEY": UPSTREAM_KEY},
                             launcher=tuple(network.command("gw")), host=network.address("gw"))
    started.registry_url, started.ready_at = registry_url, time.monotonic()
    yield started
    started.stop()


@dataclass(frozen=True)
class Outcome:
    started: float  # time.time() when the client sent it
    status: int
    member: str
    attempts: int
    events: tuple[str, ...] | None  # a stream's data lines; None for a plain request


class Workload:
    """``num_workers`` clients in a loop, plain and streamed completions by turns, until stopped."""

    def __init__(self, client: httpx.AsyncClient, num_workers: int = 4) -> None:
        self.client, self.outcomes, self.stop = client, [], asyncio.Event()
        self.tasks = [asyncio.create_task(self._loop(w)) for w in range(num_workers)]

    async def _loop(self, worker: int) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            self.outcomes.append(await self._one(f"worker {worker} request {n}: say", stream=n % 2 == 0))

    async def _one(self, prompt: str, stream: bool) -> Outcome:
        started, body = time.time(), {"prompt": prompt, "max_tokens": 8 if stream else 4, "stream": stream}
        if not stream:
            r = await self.client.post("/v1/completions", json=body, headers=USER)
            return Outcome(started, r.status_code, r.headers.get("x-mcp-member", ""),
                           int(r.headers.get("x-mcp-attempts", 0)), None)
        async with self.client.stream("POST", "/v1/completions", json=body, headers=USER) as r:
            events = tuple([line.removeprefix("data: ") async for line in r.aiter_lines() if line.startswith("data: ")])
        return Outcome(started, r.status_code, r.headers.get("x-mcp-member", ""),
                       int(r.headers.get("x-mcp-attempts", 0)), events)

    def served_by(self, member: str, after: float) -> int:
        return sum(1 for o in self.outcomes if o.member == member and o.started > after)

    async def finish(self, timeout_s: float = 120.0) -> list[Outcome]:
        self.stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks), timeout_s)
        return self.outcomes


async def _until(check, timeout_s: float, what: str) -> float:
    """Poll ``check()`` (plain or async) until it holds; the time.time() it first held. Fails after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = check()
        if await held if asyncio.iscoroutine(held) else held:
            return time.time()
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout_s:.1f} s")


async def _member(client: httpx.AsyncClient, pool: str, name: str) -> dict:
    members = (await client.get("/admin/pools", headers=ADMIN)).json()[pool]["members"]
    return next(m for m in members if m["name"] == name)


def _logged_at(log: str, text: str, after: float) -> float:
    """When the gateway first logged a line holding ``text`` at or after ``after`` (time.time())."""
    for line in log.splitlines():
        if text in line:
            at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if at >= after - 0.001:
                return at
    raise AssertionError(f"the gateway never logged {text!r} after the cut:\n{log[-3000:]}")


def _metric(text: str, name: str, **labels: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()))


def _prompt_preferring(member: str, members: list[str]) -> str:
    """A prompt whose prefix a ``picking: prefix`` pool sends to ``member`` first."""
    for i in range(1000):
        prompt = f"probe {i:04d}: the quick brown fox jumps over the lazy dog"
        if rendezvous_order(prefix_key(prompt, BLOCK_CHARS), members)[0] == member:
            return prompt
    raise AssertionError(f"no prompt prefers {member}")


async def _cut_h2_under_load(gateway, network) -> dict:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=TIMEOUT_MS / 1000 + 30) as client:
        load = Workload(client)
        seen = {}
        try:
            await _until(lambda: load.served_by("h2", 0) >= 3 and load.served_by("h1", 0) >= 3, 120,
                         "both hosts answer under load")
            # the connection of the affine pool's one health check (at the gateway's start, over
            # within its timeout) has outlived the keep-alive expiry of the gateway's httpx client:
            # the probes below have to connect
            idle_after = gateway.ready_at + AFFINE_HEALTH["timeout_s"] + httpx.Limits().keepalive_expiry
            await asyncio.sleep(max(0.0, idle_after - time.monotonic()))
            seen["cut"] = time.time()
            await asyncio.to_thread(network.cut, "h2")
            seen["down"] = await _until(lambda: _state(client, "main", "h2", healthy=False), FAILOVER_BOUND_S + 5,
                                        "the gateway marks h2 down")
            seen["open"] = await _until(lambda: _state(client, "main", "h2", breaker="open"), BREAKER_BOUND_S + 5,
                                        "h2's breaker opens")
            seen["probes"] = await _probe_affine(client)
        finally:
            seen["restore"] = time.time()
            await asyncio.to_thread(network.restore, "h2")
        seen["up"] = await _until(lambda: _state(client, "main", "h2", healthy=True), RECOVERY_BOUND_S + 5,
                                  "the gateway marks h2 up again")
        await _until(lambda: _state(client, "main", "h2", breaker="closed"), BREAKER["cool_down_s"] + 60,
                     "h2's breaker closes")
        await _until(lambda: load.served_by("h2", seen["restore"]) >= 3, 60, "h2 serves again")
        seen["outcomes"] = await load.finish()
        seen["pools"] = (await client.get("/admin/pools", headers=ADMIN)).json()
        seen["metrics"] = (await client.get("/metrics")).text
    return seen


async def _state(client: httpx.AsyncClient, pool: str, name: str, **expected) -> bool:
    member = await _member(client, pool, name)
    return all(member[key] == value for key, value in expected.items())


async def _probe_affine(client: httpx.AsyncClient) -> list[tuple[int, str, int]]:
    """Requests one after another whose prefix the affine pool sends to h2 first: one more than
    it takes to open h2's breaker there. (status, member, attempts) of each."""
    prompt, replies = _prompt_preferring("h2", ["h1", "h2"]), []
    for _ in range(BREAKER["failure_threshold"] + 1):
        r = await client.post("/v1/completions", headers=USER,
                              json={"model": "affine", "prompt": prompt, "max_tokens": 1})
        replies.append((r.status_code, r.headers.get("x-mcp-member"), int(r.headers.get("x-mcp-attempts", 0))))
    return replies


def test_a_host_cut_off_under_load_fails_over_within_its_health_checks_and_loses_no_request(gateway, network):
    seen = asyncio.run(_cut_h2_under_load(gateway, network))
    outcomes = seen["outcomes"]
    print("failover", {k: round(v - seen["cut"], 2) for k, v in seen.items() if isinstance(v, float)})

    failed = [o for o in outcomes if o.status != 200]
    assert not failed, failed[:3]
    for o in outcomes:
        if o.events is not None:
            assert o.events[-1] == "[DONE]", o
            errors = error_events(list(o.events))
            if errors:  # broken off by the cut: only ever after events had already gone out
                assert json.loads(o.events[errors[0]])["error"]["code"] == "upstream_broken" and errors[0] >= 1, o

    # failover, by the gateway's clock: the member is down within one health check cycle
    down_at = _logged_at(gateway.log(), "pool main member h2 is unhealthy", seen["cut"])
    assert down_at - seen["cut"] <= FAILOVER_BOUND_S, (down_at - seen["cut"], FAILOVER_BOUND_S)
    assert seen["down"] - seen["cut"] <= FAILOVER_BOUND_S + MARGIN_S
    assert seen["open"] - seen["cut"] <= BREAKER_BOUND_S, (seen["open"] - seen["cut"], BREAKER_BOUND_S)
    assert seen["up"] - seen["restore"] <= RECOVERY_BOUND_S, (seen["up"] - seen["restore"], RECOVERY_BOUND_S)
    # from the moment it knew, no new request went to the cut host, none needed a second try
    while_down = [o for o in outcomes if seen["down"] <= o.started <= seen["restore"]]
    assert while_down and all((o.member, o.attempts) == ("h1", 1) for o in while_down), while_down[:3]
    assert sum(1 for o in outcomes if o.member == "h2" and o.started > seen["restore"]) >= 3

    # unstarted requests: the first failure_threshold ones tried h2, failed to reach it and were
    # retried on h1; then h2's breaker in that pool was open and they went to h1 at once
    threshold = BREAKER["failure_threshold"]
    assert seen["probes"] == [(200, "h1", 2)] * threshold + [(200, "h1", 1)] * (len(seen["probes"]) - threshold)
    metrics = seen["metrics"]
    assert _metric(metrics, "mcp_gateway_retries_total", pool="affine") == threshold
    affine = {m["name"]: m for m in seen["pools"]["affine"]["members"]}
    assert affine["h2"]["breaker"] == "open" and affine["h2"]["failures"] == threshold

    main = {m["name"]: m for m in seen["pools"]["main"]["members"]}
    assert (main["h2"]["breaker"], main["h2"]["healthy"]) == ("closed", True) and main["h2"]["breaker_opened"] >= 1
    assert main["h1"]["breaker_opened"] == 0
    assert 'mcp_gateway_breaker_state{member="h2",pool="main"} 0.0' in metrics


def test_a_canary_cut_off_rolls_back_and_a_healthy_one_reaches_100_across_hosts(gateway, network):
    started = httpx.post(gateway.url + "/admin/rollouts", headers=ADMIN, timeout=30, json={
        "route": "cut-rollout", "steps": [20, 100], "hold_s": 3600, "min_requests": 4, "max_p95_ms": 60000}).json()
    assert (started["status"], started["weight"]) == ("running", 20)
    time.sleep(0.4)  # the gateway reads the new weight on its next tick
    served = [httpx.post(gateway.url + "/v1/completions", headers=USER, timeout=60,
                         json={"model": "bot-cut", "prompt": "hi", "max_tokens": 1, "user": f"before-{i}"})
              for i in range(30)]
    assert all(r.status_code == 200 for r in served)
    assert "h3" in {r.headers["x-mcp-member"] for r in served}  # the canary answered from its host

    network.cut("h3")
    try:
        ended = asyncio.run(traffic_until_rollout_ends(gateway.url, "bot-cut", started["id"]))  # every answer a 200
    finally:
        network.restore("h3")
    assert (ended["status"], ended["weight"]) == ("rolled_back", 0)
    assert ended["reason"].startswith("analysis failed: error rate"), ended["reason"]
    metrics = httpx.get(gateway.url + "/metrics", timeout=30).text
    assert _metric(metrics, "mcp_gateway_fallbacks_total", route="cut-rollout") >= 1
    time.sleep(0.4)
    assert arms_served(gateway.url, "bot-cut") == {"stable"}

    asyncio.run(_until_canary_host_serves(gateway))
    started = httpx.post(gateway.url + "/admin/rollouts", headers=ADMIN, timeout=30, json={
        "route": "good-rollout", "steps": [20, 50, 100], "hold_s": 0.5, "min_requests": 4, "max_p95_ms": 30000}).json()
    ended = asyncio.run(traffic_until_rollout_ends(gateway.url, "bot-good", started["id"]))
    assert (ended["status"], ended["weight"]) == ("succeeded", 100)
    steps = [(e["kind"], e["weight"]) for e in ended["events"] if e["kind"] != "analysis"]
    assert steps == [("start", 20), ("step", 50), ("step", 100), ("succeed", 100)]
    time.sleep(0.4)
    assert arms_served(gateway.url, "bot-good") == {"canary"}
    with Registry.open(gateway.registry_url) as registry:
        assert registry.get("smol", "2").stage == Stage.PRODUCTION
        assert registry.get("smol", "1").stage == Stage.ARCHIVED


async def _until_canary_host_serves(gateway) -> None:
    """h3 is back: healthy, and its breaker closed by a trial request once the cool-down is over."""
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as client:
        async def closed() -> bool:
            breaker = (await _member(client, "canary", "h3"))["breaker"]
            if breaker == "half_open":  # the trial
                await client.post("/v1/completions", headers=USER,
                                  json={"model": "canary-direct", "prompt": "hi", "max_tokens": 1})
            return breaker == "closed"
        await _until(closed, BREAKER["cool_down_s"] + 60, "h3's breaker closes")
