"""The chart's scale-out options, rendered by the real Helm and validated offline as deploy/k8s is:
``inferenceExtension.enabled`` (InferencePool, endpoint picker, InferenceObjectives, Gateway,
HTTPRoute) and ``engine.autoscaling.mode`` keda / none. Core kinds pass kubernetes-validate
(strict); the CRD kinds pass check-jsonschema against deploy/schemas; mistakes are refused."""

from __future__ import annotations

import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from test_helm_chart import CHART, helm, named, render  # noqa: E402
from test_manifests import KUBERNETES_VERSION, SCHEMAS, check_jsonschema  # noqa: E402

from mcp.config.runtime import load_config  # noqa: E402

CRDS = {"InferencePool": "inferencepool.json", "InferenceObjective": "inferenceobjective.json",
        "Gateway": "gateway.json", "HTTPRoute": "httproute.json", "ScaledObject": "scaledobject.json",
        "Rollout": "rollout.json", "AnalysisTemplate": "analysistemplate.json",
        "ServiceMonitor": "servicemonitor.json", "PrometheusRule": "prometheusrule.json"}
EXTENSION = ("inferenceExtension.enabled=true", "engine.autoscaling.mode=keda")


def validate_all(docs: list[dict], folder: Path) -> None:
    """Every object: core kinds by Kubernetes' own schemas, custom ones by deploy/schemas."""
    for doc in docs:
        if doc["kind"] not in CRDS:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    for kind in {doc["kind"] for doc in docs} & set(CRDS):
        done = check_jsonschema(SCHEMAS / CRDS[kind], [d for d in docs if d["kind"] == kind], folder)
        assert done.returncode == 0 and "ok -- validation done" in done.stdout, (kind, done.stdout + done.stderr)


def test_the_inference_extension_and_keda_render_valid_objects(tmp_path: Path) -> None:
    docs = render(*EXTENSION)
    validate_all(docs, tmp_path)
    kinds = {doc["kind"] for doc in docs}
    assert {"InferencePool", "InferenceObjective", "Gateway", "HTTPRoute", "ScaledObject", "Role"} <= kinds
    assert "HorizontalPodAutoscaler" not in kinds


def test_the_pool_selects_the_engine_pods_and_names_its_picker() -> None:
    docs = render(*EXTENSION)
    pool = named(docs, "InferencePool", "mcp2026-pool")["spec"]
    engine = named(docs, "Rollout", "mcp2026-engine")["spec"]["template"]
    assert pool["selector"]["matchLabels"] == engine["metadata"]["labels"]
    assert pool["targetPorts"] == [{"number": engine["spec"]["containers"][0]["ports"][0]["containerPort"]}]
    picker = named(docs, "Service", pool["endpointPickerRef"]["name"])
    assert picker["spec"]["ports"][0]["port"] == pool["endpointPickerRef"]["port"]["number"] == 9002
    epp = named(docs, "Deployment", "mcp2026-epp")["spec"]["template"]["spec"]
    assert "--pool-name=mcp2026-pool" in epp["containers"][0]["args"]
    plugins = yaml.safe_load(named(docs, "ConfigMap", "mcp2026-epp")["data"]["plugins.yaml"])
    assert {p["type"] for p in plugins["plugins"]} == {"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"}
    route = named(docs, "HTTPRoute", "mcp2026-inference")["spec"]
    assert route["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "mcp2026-pool"}]
    assert route["parentRefs"][0]["name"] == named(docs, "Gateway", "mcp2026-inference")["metadata"]["name"]


def test_objectives_map_the_slo_classes_to_priorities() -> None:
    docs = render(*EXTENSION, "inferenceExtension.priorities.low=-5")
    priorities = {d["metadata"]["name"]: d["spec"]["priority"] for d in docs if d["kind"] == "InferenceObjective"}
    assert priorities == {"mcp2026-critical": 2, "mcp2026-high": 1, "mcp2026-medium": 0, "mcp2026-low": -5}
    assert all(d["spec"]["poolRef"]["name"] == "mcp2026-pool" for d in docs if d["kind"] == "InferenceObjective")


def test_keda_scales_the_rollout_on_vllm_waiting_and_kv_use(tmp_path: Path) -> None:
    done = helm("template", "mcp2026", str(CHART), "--set", "engine.autoscaling.mode=keda",
                "--set-string", "engine.autoscaling.waitingPerPod=6,engine.autoscaling.kvUsagePerPod=0.7")
    assert done.returncode == 0, done.stderr
    docs = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    scaled = named(docs, "ScaledObject", "mcp2026-engine")["spec"]
    assert scaled["scaleTargetRef"] == {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "mcp2026-engine"}
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (3, 20)
    queries = {t["name"]: (t["metadata"]["query"], t["metadata"]["threshold"]) for t in scaled["triggers"]}
    assert queries["waiting-requests"][0].startswith("sum(vllm:num_requests_waiting{")
    assert queries["kv-cache-usage"][0].startswith("sum(vllm:kv_cache_usage_perc{")
    assert (queries["waiting-requests"][1], queries["kv-cache-usage"][1]) == ("6", "0.7")
    path = tmp_path / "mcp-config.yaml"
    path.write_text(named(docs, "ConfigMap", "mcp2026-config")["data"]["mcp-config.yaml"])
    assert load_config(path).serving.vllm_metrics is True


def test_the_hpa_reads_waiting_and_kv_use_and_none_makes_no_scaler() -> None:
    hpa = named(render(), "HorizontalPodAutoscaler", "mcp2026-engine")["spec"]
    assert [m["pods"]["metric"]["name"] for m in hpa["metrics"]] == ["mcp_num_requests_waiting", "mcp_kv_cache_usage_perc"]
    kinds = {doc["kind"] for doc in render("engine.autoscaling.mode=none")}
    assert not kinds & {"HorizontalPodAutoscaler", "ScaledObject"}


@pytest.mark.parametrize("kind, spoil, error", [
    ("InferencePool", lambda s: s.update(targetPorts=[{"number": 70000}]), "70000"),
    ("InferencePool", lambda s: s["endpointPickerRef"].update(failureMode="FailSoft"), "FailSoft"),
    ("InferenceObjective", lambda s: s.update(priority="high"), "high"),
    ("HTTPRoute", lambda s: s["rules"][0]["matches"][0]["path"].update(type="Prefix"), "Prefix"),
    ("ScaledObject", lambda s: s["triggers"][0]["metadata"].update(threshold="four"), "four"),
    ("Gateway", lambda s: s["listeners"][0].update(prot="HTTP"), "prot"),
])
def test_the_crd_schemas_refuse_mistakes(kind: str, spoil, error: str, tmp_path: Path) -> None:
    doc = next(d for d in render(*EXTENSION) if d["kind"] == kind)
    spoil(doc["spec"])
    done = check_jsonschema(SCHEMAS / CRDS[kind], [doc], tmp_path)
    assert done.returncode == 1 and error in done.stdout, done.stdout


@pytest.mark.parametrize("value, error", [
    ("engine.autoscaling.mode=auto", "engine.autoscaling.mode: engine.autoscaling.mode must be one of the following"),
    ("engine.autoscaling.kvUsagePerPod=1.5", "engine.autoscaling.kvUsagePerPod: Does not match pattern"),
    ("inferenceExtension.endpointPicker.failureMode=Open", "inferenceExtension.endpointPicker.failureMode: "
                                                            "inferenceExtension.endpointPicker.failureMode must be one of"),
    ("inferenceExtension.priorities.urgent=3", "Additional property urgent is not allowed"),
])
def test_bad_scale_out_values_are_named(value: str, error: str) -> None:
    done = helm("template", "mcp2026", str(CHART), "--set", value)
    assert done.returncode == 1 and error in done.stderr, done.stderr


@pytest.mark.parametrize("option", ["engine.autoscaling.mode=keda", "inferenceExtension.enabled=true"])
def test_the_options_that_read_vllm_metrics_refuse_them_off(option: str) -> None:
    done = helm("template", "mcp2026", str(CHART), "--set", "engine.vllmMetrics=false", "--set", option)
    assert done.returncode == 1
    assert "engine.vllmMetrics is false, but engine.autoscaling.mode keda and inferenceExtension.enabled" in done.stderr
