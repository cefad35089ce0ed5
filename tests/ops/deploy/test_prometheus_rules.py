"""deploy/prometheus: the rules pass `promtool check rules`, their unit tests pass `promtool test
rules`, and a real Prometheus scraping a running server records them from our metrics."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

RULES = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_promtool_checks_the_rules(promtool: str) -> None:
    done = run(promtool, "check", "rules", str(RULES / "recording-rules.yaml"), str(RULES / "alerting-rules.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 13 rules found" in done.stdout and "SUCCESS: 6 rules found" in done.stdout


def test_promtool_unit_tests_fire_and_stay_quiet(promtool: str) -> None:
    done = run(promtool, "test", "rules", str(RULES / "tests" / "alerts-test.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_rejects_a_broken_rule(promtool: str, tmp_path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text((RULES / "alerting-rules.yaml").read_text().replace("for: 3m", "for: three minutes", 1))
    done = run(promtool, "check", "rules", str(broken))
    assert done.returncode != 0
    assert "three minutes" in done.stdout + done.stderr


def served_count(url: str) -> float:
    """Requests the server has finished, from its own /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=10.0).text
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == "mcp_e2e_request_latency_seconds_count")


@pytest.mark.slow
def test_prometheus_scrapes_a_server_and_records_its_latency(prometheus, served_tiny) -> None:
    # one request first, so that the histogram's series exist before the scrapes that make its
    # rate (a series first seen at 3 has no increase); other tests may have made them already
    httpx.post(served_tiny.url + "/v1/completions", json={"model": "tiny", "prompt": "Hi", "max_tokens": 1},
               timeout=60.0).raise_for_status()
    prometheus.wait_for('up{job="mcp2026"} == 1')  # requests after the first scrape make a rate
    prometheus.wait_for('mcp_e2e_request_latency_seconds_count{job="mcp2026"} > 0')
    before = served_count(served_tiny.url)  # other tests share the server
    for _ in range(3):
        answer = httpx.post(served_tiny.url + "/v1/completions", json={"model": "tiny", "prompt": "Hello",
                                                                       "max_tokens": 4}, timeout=60.0)
        assert answer.status_code == 200, answer.text
    total = 'sum by (model) (mcp_e2e_request_latency_seconds_count{job="mcp2026"})'
    [count] = prometheus.wait_for(f"{total} >= {before + 3}")
    assert count["metric"] == {"model": "tiny"} and float(count["value"][1]) == before + 3
    [p95] = prometheus.wait_for("model:mcp_e2e_request_latency_seconds:p95_5m > 0")  # NaN until a rate
    assert p95["metric"]["model"] == "tiny" and float(p95["value"][1]) < 10  # inside a finite bucket
    rules = httpx.get(prometheus.url + "/api/v1/rules", timeout=10.0).json()["data"]["groups"]
    unhealthy = [(rule["name"], rule.get("lastError")) for group in rules for rule in group["rules"]
                 if rule["health"] not in ("ok", "unknown")]
    assert not unhealthy


def test_every_alert_has_its_runbook_section() -> None:
    docs = (RULES.parents[1] / "docs" / "operations.md").read_text()
    anchors = {line[4:].strip().lower() for line in docs.splitlines() if line.startswith("### ")}
    alerts = [rule for group in yaml.safe_load((RULES / "alerting-rules.yaml").read_text())["groups"]
              for rule in group["rules"]]
    for rule in alerts:
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{rule['alert'].lower()}"
        assert rule["alert"].lower() in anchors, f"docs/operations.md has no section for {rule['alert']}"
