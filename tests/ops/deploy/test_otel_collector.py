"""deploy/otel/collector.yaml, checked for structure: no otelcol binary is installable here (no
Debian or PyPI package), so `otelcol validate` cannot run. What is checked is what that command
checks first: every pipeline names components that are defined, of types the core distribution
has, with the OTLP receiver on the standard ports and an exporter to Jaeger."""

from __future__ import annotations

from pathlib import Path

import yaml

CONFIG = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "otel" / "collector.yaml").read_text())
CORE = {"receivers": {"otlp"}, "processors": {"batch", "memory_limiter"},
        "exporters": {"otlp", "otlphttp", "debug"}, "extensions": {"health_check", "zpages", "pprof"}}


def test_every_component_has_a_core_type() -> None:
    for section, types in CORE.items():
        for name in CONFIG.get(section, {}):
            assert name.split("/", 1)[0] in types, f"{section}.{name}: not a core component"
    assert set(CONFIG) == {*CORE, "service"}


def test_pipelines_name_defined_components() -> None:
    service = CONFIG["service"]
    assert set(service["extensions"]) <= set(CONFIG["extensions"])
    [(signal, pipeline)] = service["pipelines"].items()
    assert signal == "traces"
    for section in ("receivers", "processors", "exporters"):
        assert pipeline[section] and set(pipeline[section]) <= set(CONFIG[section]), section
    assert pipeline["processors"][0] == "memory_limiter"  # the collector's own advice: first in line


def test_otlp_in_and_jaeger_out() -> None:
    protocols = CONFIG["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317") and protocols["http"]["endpoint"].endswith(":4318")
    assert CONFIG["exporters"]["otlp/jaeger"]["endpoint"] == "jaeger-collector:4317"
