"""The AnalysisTemplate's web metrics, evaluated as Argo Rollouts would (argo_analysis.py), against
the JSON a running ``mcp2026 serve`` answers on /health?metric=..."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from argo_analysis import (FAILED, INCONCLUSIVE, SUCCESSFUL, condition, json_path, measure,  # noqa: E402
                           metric_phase, render_url)

TEMPLATE = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy/k8s/analysis-template.yaml").read_text())
METRICS = {metric["name"]: metric for metric in TEMPLATE["spec"]["metrics"]}


def probe(value: float, samples: int = 100, healthy: bool = True) -> dict:
    return {"metric": "latency_p95", "value": value, "healthy": healthy, "window_s": 300.0, "samples": samples}


def test_the_gates_are_the_briefs() -> None:
    assert set(METRICS) == {"latency-p95", "error-rate", "oom"}
    p95, errors, oom = METRICS["latency-p95"], METRICS["error-rate"], METRICS["oom"]
    assert [measure(p95, probe(v)) for v in (0.5, 0.8, 0.801, 3.0)] == [SUCCESSFUL, SUCCESSFUL, FAILED, FAILED]
    assert [measure(errors, probe(v)) for v in (0.0, 0.0019, 0.002, 0.5)] == [SUCCESSFUL, SUCCESSFUL, FAILED, FAILED]
    assert [measure(oom, probe(v)) for v in (0.0, 1.0)] == [SUCCESSFUL, FAILED]
    assert measure(p95, probe(0.0, samples=0)) == INCONCLUSIVE  # nobody used the canary this minute
    assert measure(oom, probe(0.0, samples=0)) == SUCCESSFUL


def test_failure_limits_are_counted_as_argo_does() -> None:
    p95, oom = METRICS["latency-p95"], METRICS["oom"]
    assert metric_phase(p95, [SUCCESSFUL, FAILED, SUCCESSFUL, SUCCESSFUL, SUCCESSFUL]) == SUCCESSFUL  # failureLimit 1
    assert metric_phase(p95, [SUCCESSFUL, FAILED, SUCCESSFUL, FAILED, SUCCESSFUL]) == FAILED
    assert metric_phase(p95, [SUCCESSFUL, INCONCLUSIVE]) == INCONCLUSIVE
    assert metric_phase(oom, [SUCCESSFUL, FAILED]) == FAILED  # OOM = 0: no measurement may fail


def test_the_evaluator_refuses_what_it_does_not_know() -> None:
    assert condition("!(result.value > 1) and (result.healthy || false)", probe(0.5))
    for text, error in [("result.p95 <= 0.8", "no field 'p95'"), ("len(result) > 0", "unknown name 'len'"),
                        ("result.value <= 0.8 &&", "ends too early"), ("result.value", "is not a boolean"),
                        ("result.healthy < 1", "compares non-numbers"), ("result.value ~ 1", "cannot read")]:
        with pytest.raises(ValueError, match=error):
            condition(text, probe(0.5))
    with pytest.raises(ValueError, match="outside the supported subset"):
        json_path("{$.items[0]}", {})


def local(url: str, server_url: str) -> str:
    """The in-cluster URL sent to the test server instead: same path and query."""
    parts, server = urlsplit(url), urlsplit(server_url)
    assert parts.netloc == "mcp2026-engine-canary.ns.svc.cluster.local:8000"
    return urlunsplit((server.scheme, server.netloc, parts.path, parts.query, ""))


@pytest.mark.slow
def test_the_template_passes_a_healthy_server(served_tiny) -> None:
    for _ in range(5):
        answer = httpx.post(served_tiny.url + "/v1/completions", json={"model": "tiny", "prompt": "Hello",
                                                                       "max_tokens": 2}, timeout=60.0)
        assert answer.status_code == 200, answer.text
    phases = {}
    for name, metric in METRICS.items():
        url = local(render_url(TEMPLATE, metric, {"namespace": "ns"}), served_tiny.url)
        answer = httpx.get(url, timeout=float(metric["provider"]["web"]["timeoutSeconds"]))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["samples"] >= 5, body
        phases[name] = measure(metric, body)
    assert phases == {"latency-p95": SUCCESSFUL, "error-rate": SUCCESSFUL, "oom": SUCCESSFUL}, phases


@pytest.mark.slow
def test_the_template_fails_a_canary_whose_requests_fail(start_server, tiny_mcp) -> None:
    """A server whose every request runs past its deadline: the error-rate gate fails, the
    latency gate (the deadline cuts requests short) and the OOM gate still pass."""
    canary = start_server({"serving": {"models": [{"name": "tiny", "source": str(tiny_mcp), "version": "2"}],
                                       "timeouts": {"request_s": 0.05}}})
    for _ in range(3):
        answer = httpx.post(canary.url + "/v1/completions", json={"model": "tiny", "prompt": "Hello",
                                                                  "max_tokens": 200, "ignore_eos": True}, timeout=60.0)
        assert answer.status_code in (200, 504), answer.text
    phases, bodies = {}, {}
    for name, metric in METRICS.items():
        url = local(render_url(TEMPLATE, metric, {"namespace": "ns"}), canary.url)
        bodies[name] = httpx.get(url, timeout=10.0).json()
        phases[name] = measure(metric, bodies[name])
    assert bodies["error-rate"]["value"] == 1.0 and bodies["error-rate"]["samples"] == 3, bodies
    assert phases == {"latency-p95": SUCCESSFUL, "error-rate": FAILED, "oom": SUCCESSFUL}, (phases, bodies)
    assert metric_phase(METRICS["error-rate"], [phases["error-rate"]] * 2) == FAILED
    wrong_service = render_url(TEMPLATE, METRICS["oom"], {"namespace": "ns", "service-name": "other"})
    answer = httpx.get(local(wrong_service, canary.url), timeout=10.0)
    assert answer.status_code == 404 and "service 'other' is not this server" in answer.text
