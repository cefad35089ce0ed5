"""Canary rollouts end to end, on SQLite and PostgreSQL: a gateway process with a registry and
the controller, real upstreams, live traffic. A canary made slow by ``MCP_FAULT_DELAY_MS``
(started from the admin API) rolls back on its own; a healthy one (started from the CLI) walks
20 -> 50 -> 100% and becomes production. Everything is read back from the registry."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import httpx
import pytest

from gateway_process import ADMIN, arms_served, traffic_until_rollout_ends
from mcp.gateway.registry.artifacts import read_artifact
from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage

pytestmark = pytest.mark.slow


def _split(canary_model: str, canary_pool: str) -> dict:
    return {"arms": [{"name": "stable", "weight": 100, "backend": {"model_id": "tiny:1", "instance_pool": "a"}},
                     {"name": "canary", "weight": 0, "backend": {"model_id": canary_model, "instance_pool": canary_pool}}]}


RULES = {"version": 1, "routes": [
    {"name": "slow-rollout", "conditions": {"model": "bot-slow"}, "split": _split("tiny:3", "slow")},
    {"name": "good-rollout", "conditions": {"model": "bot-good"}, "split": _split("tiny:2", "b")},
], "default": {"backend": {"model_id": "tiny:1", "instance_pool": "a"}}}


def test_a_slow_canary_rolls_back_and_a_healthy_one_reaches_100(registry_url, tiny_mcp, start_gateway, pools):
    artifact = read_artifact(tiny_mcp)
    with Registry.open(registry_url, actor="tester") as registry:
        registry.register(artifact, "tiny", "1", Stage.PRODUCTION)
        registry.register(artifact, "tiny", "2")
        registry.register(artifact, "tiny", "3")
    gateway = start_gateway({"gateway": {"registry": registry_url}, "canary": {"interval_s": 0.3}, "pools": pools}, RULES)

    # the slow canary, from the admin API: its p95 (>= 1.5 s) breaks the 800 ms bound at the first analysis
    started = httpx.post(gateway.url + "/admin/rollouts", headers=ADMIN, json={
        "route": "slow-rollout", "steps": [20, 50, 100], "hold_s": 0.5, "min_requests": 4}).json()
    assert (started["status"], started["weight"], started["created_by"]) == ("running", 20, "tenant:ops")
    ended = asyncio.run(traffic_until_rollout_ends(gateway.url, "bot-slow", started["id"]))
    assert (ended["status"], ended["weight"], ended["step"]) == ("rolled_back", 0, 0)
    assert ended["reason"].startswith("analysis failed: p95 latency") and "> 800 ms" in ended["reason"]
    [failed] = [e for e in ended["events"] if e["kind"] == "analysis"]
    assert failed["passed"] is False and failed["detail"]["canary"]["p95_ms"] >= 1500
    assert failed["actor"] == "canary-controller"
    time.sleep(0.4)  # the gateway reads the new weight on its next tick
    assert arms_served(gateway.url, "bot-slow") == {"stable"}

    # the healthy canary, from the CLI; the p95 bound is loose so that two busy cores cannot fail it
    cli = [sys.executable, "-m", "mcp.commands.cli", "rollout", "--registry", registry_url, "--actor", "alice"]
    out = subprocess.run(cli + ["start", "good-rollout", "--rules", str(gateway.rules_path), "--steps", "20,50,100",
                                "--hold", "0.5", "--min-requests", "4", "--max-p95-ms", "5000"],
                         capture_output=True, text=True, check=True).stdout
    assert "started on route good-rollout: canary (tiny:2) at 20%" in out
    rollout_id = int(out.split("#")[1].split()[0])
    ended = asyncio.run(traffic_until_rollout_ends(gateway.url, "bot-good", rollout_id))
    assert (ended["status"], ended["weight"]) == ("succeeded", 100)
    steps = [(e["kind"], e["weight"]) for e in ended["events"] if e["kind"] != "analysis"]
    assert steps == [("start", 20), ("step", 50), ("step", 100), ("succeed", 100)]
    assert [e["passed"] for e in ended["events"] if e["kind"] == "analysis"] == [True, True, True]
    time.sleep(0.4)
    assert arms_served(gateway.url, "bot-good") == {"canary"}

    status = subprocess.run(cli + ["status", str(rollout_id)], capture_output=True, text=True, check=True).stdout
    assert "succeeded" in status and "alice" in status and "canary-controller" in status
    with Registry.open(registry_url) as registry:  # the registry holds the outcome
        assert registry.get("tiny", "2").stage == Stage.PRODUCTION
        assert registry.get("tiny", "3").stage == Stage.STAGING
        assert registry.get("tiny", "1").stage == Stage.ARCHIVED
        [deployment] = registry.deployments("tiny", "2")
        assert (deployment.role, deployment.traffic_percent) == ("canary", 100)
    aborted = subprocess.run(cli + ["abort", str(rollout_id)], capture_output=True, text=True)
    assert aborted.returncode == 2 and f"rollout #{rollout_id} has ended (succeeded" in aborted.stderr
