"""deploy/grafana: every panel query names only metrics our code registers (read from the code
that registers them) or series our recording rules record, and a real Prometheus accepts every
query, as it accepts every rule expression."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DASHBOARDS = ROOT / "deploy" / "grafana" / "dashboards"
RULES = [ROOT / "deploy" / "prometheus" / name for name in ("recording-rules.yaml", "alerting-rules.yaml")]
# dashboard -> where the metrics it shows are registered
SOURCES = {"engine": ["src/mcp/serving/metrics.py"], "slo": ["src/mcp/serving/metrics.py"],
           "gateway": ["src/mcp/gateway/metrics.py"], "governance": ["src/mcp/governance"]}
_SUFFIXES = {"Counter": ("_total", "_created"), "CounterMetricFamily": ("_total", "_created"),
             "Histogram": ("_bucket", "_sum", "_count", "_created"),
             "HistogramMetricFamily": ("_bucket", "_sum", "_count"),
             "Summary": ("", "_sum", "_count", "_created"), "SummaryMetricFamily": ("", "_sum", "_count"),
             "Gauge": ("",), "GaugeMetricFamily": ("",), "Info": ("_info",), "InfoMetricFamily": ("_info",)}


def registered_series(paths: list[Path]) -> set[str]:
    """The series names a prometheus_client registration in these files exposes."""
    names: set[str] = set()
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]
    for file in files:
        for node in ast.walk(ast.parse(file.read_text())):
            if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
                continue
            kind = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if kind in _SUFFIXES and isinstance(node.args[0].value, str):
                base = node.args[0].value.removesuffix("_total") if "Counter" in kind else node.args[0].value
                names |= {base + suffix for suffix in _SUFFIXES[kind]}
    return names


def recorded_series() -> set[str]:
    return {rule["record"] for path in RULES for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"] if "record" in rule}


def panel_queries(dashboard: str) -> list[tuple[str, str]]:
    data = json.loads((DASHBOARDS / f"{dashboard}.json").read_text())
    return [(panel["title"], target["expr"]) for panel in data["panels"] for target in panel["targets"]]


def series_names(expr: str) -> set[str]:
    """Metric and recorded-series names of a PromQL expression (string literals removed first)."""
    bare = re.sub(r'"[^"]*"', '""', expr)
    return {name for name in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare) if name.startswith("mcp_") or ":" in name}


def test_every_dashboard_is_listed() -> None:
    assert {path.stem for path in DASHBOARDS.glob("*.json")} == set(SOURCES)


@pytest.mark.parametrize("dashboard", sorted(SOURCES))
def test_panels_use_only_exported_metrics(dashboard: str) -> None:
    sources = [ROOT / path for path in SOURCES[dashboard]]
    known = registered_series(sources) | recorded_series()
    unknown = {f"{title}: {name}" for title, expr in panel_queries(dashboard) for name in series_names(expr)
               if name not in known}
    assert not unknown, (f"the {dashboard} dashboard queries metrics that {', '.join(SOURCES[dashboard])} "
                         f"does not register (nor deploy/prometheus record): {sorted(unknown)}")


def test_the_name_check_reads_registrations() -> None:
    serving = registered_series([ROOT / "src/mcp/serving/metrics.py"])
    assert {"mcp_time_to_first_token_seconds_bucket", "mcp_request_success_total", "mcp_slo_good_requests_total",
            "mcp_num_requests_waiting", "mcp_oom_total", "mcp_latency_drift"} <= serving
    assert "mcp_request_success" not in serving and "mcp_oom" not in serving  # counters expose *_total
    assert series_names('sum(rate(mcp_x_total{a="mcp_y"}[5m])) / model:mcp_z:p95_5m') == {"mcp_x_total",
                                                                                          "model:mcp_z:p95_5m"}


def all_expressions() -> list[str]:
    rules = [rule["expr"] for path in RULES for group in yaml.safe_load(path.read_text())["groups"]
             for rule in group["rules"]]
    return [expr for dashboard in sorted(SOURCES) for _, expr in panel_queries(dashboard)] + rules


@pytest.mark.slow
def test_prometheus_accepts_every_query(prometheus) -> None:
    refused = {}
    for expr in all_expressions():
        answer = prometheus.query(expr)
        if answer["status"] != "success":
            refused[expr] = answer.get("error")
    assert not refused, refused
    assert prometheus.query("sum(rate(mcp_generation_tokens_total[5m]")["status"] == "error"  # the check can fail
