"""deploy/k8s: core kinds pass kubernetes-validate (strict), the CRD kinds pass check-jsonschema
against deploy/schemas, the PrometheusRule carries deploy/prometheus's rules, and the configs
inside the ConfigMaps load with our own config loader."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from mcp.config.runtime import load_config

ROOT = Path(__file__).resolve().parents[3]
K8S, SCHEMAS = ROOT / "deploy" / "k8s", ROOT / "deploy" / "schemas"
KUBERNETES_VERSION = "1.30.0"
CRDS = {"Rollout": "rollout.json", "AnalysisTemplate": "analysistemplate.json",
        "PrometheusRule": "prometheusrule.json", "ServiceMonitor": "servicemonitor.json"}


def manifests() -> list[dict]:
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(kind: str) -> list[dict]:
    return [doc for doc in manifests() if doc["kind"] == kind]


def test_every_part_is_there() -> None:
    kinds = Counter(doc["kind"] for doc in manifests())
    assert kinds == {"ConfigMap": 3, "Secret": 1, "Service": 4, "Deployment": 1, "Rollout": 1, "AnalysisTemplate": 1,
                     "HorizontalPodAutoscaler": 1, "PodDisruptionBudget": 2, "PersistentVolumeClaim": 1,
                     "ServiceMonitor": 1, "PrometheusRule": 1}


@pytest.mark.parametrize("doc", [d for d in manifests() if d["kind"] not in CRDS],
                         ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_core_kinds_are_valid_kubernetes(doc: dict) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_rollouts_pod_template_is_a_valid_pod_spec() -> None:
    """The Rollout CRD leaves its template to Kubernetes' PodTemplateSpec: check it as a Deployment's."""
    [rollout] = by_kind("Rollout")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": rollout["metadata"],
                  "spec": {"selector": rollout["spec"]["selector"], "template": rollout["spec"]["template"]}}
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_kubernetes_validate_catches_a_typo() -> None:
    [pdb] = [d for d in by_kind("PodDisruptionBudget") if d["metadata"]["name"] == "mcp2026-engine"]
    with pytest.raises(kubernetes_validate.ValidationError, match="minAvaliable"):
        spoiled = {**pdb, "spec": {**pdb["spec"], "minAvaliable": 2}}
        kubernetes_validate.validate(spoiled, KUBERNETES_VERSION, strict=True)


def check_jsonschema(schema: Path, docs: list[dict], folder: Path) -> subprocess.CompletedProcess:
    files = []
    for i, doc in enumerate(docs):
        files.append(folder / f"{doc['kind']}-{i}.json")
        files[-1].write_text(json.dumps(doc))
    command = [str(Path(sys.executable).parent / "check-jsonschema"), "--schemafile", str(schema), *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_custom_resources_match_their_crd_schema(kind: str, tmp_path: Path) -> None:
    docs = by_kind(kind)
    done = check_jsonschema(SCHEMAS / CRDS[kind], docs, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok -- validation done" in done.stdout


@pytest.mark.parametrize("kind, spoil, error", [
    ("Rollout", lambda s: s["strategy"]["canary"]["steps"].insert(0, {"setWeigth": 5}), "setWeigth"),
    ("Rollout", lambda s: s["strategy"]["canary"]["steps"].insert(0, {"setWeight": 140}), "140"),
    ("AnalysisTemplate", lambda s: s["metrics"][0].update(failurelimit=1), "failurelimit"),
    ("AnalysisTemplate", lambda s: s["metrics"][0]["provider"]["web"].update(jsonPath="$.value"), "$.value"),
    ("PrometheusRule", lambda s: s["groups"][0]["rules"][0].update(alert="Both"), "rules"),
    ("ServiceMonitor", lambda s: s["endpoints"][0].update(interval="15 seconds"), "15 seconds"),
])
def test_the_crd_schemas_refuse_mistakes(kind: str, spoil, error: str, tmp_path: Path) -> None:
    [doc] = by_kind(kind)
    spoil(doc["spec"])
    done = check_jsonschema(SCHEMAS / CRDS[kind], [doc], tmp_path)
    assert done.returncode == 1, done.stdout
    assert error in done.stdout


def test_the_prometheus_rule_is_deploy_prometheus() -> None:
    [rule] = by_kind("PrometheusRule")
    files = [yaml.safe_load((ROOT / "deploy" / "prometheus" / name).read_text())["groups"]
             for name in ("recording-rules.yaml", "alerting-rules.yaml")]
    assert rule["spec"]["groups"] == files[0] + files[1]


def test_the_engine_config_loads_and_its_key_is_the_secrets(tmp_path: Path) -> None:
    import hashlib

    [config_map] = [d for d in by_kind("ConfigMap") if d["metadata"]["name"] == "mcp2026-config"]
    path = tmp_path / "mcp-config.yaml"
    path.write_text(config_map["data"]["mcp-config.yaml"])
    config = load_config(path)
    [secret] = by_kind("Secret")
    key = secret["stringData"]["engine-api-key"]
    [tenant] = config.serving.tenants
    assert tenant.name == "gateway" and hashlib.sha256(key.encode()).hexdigest() in tenant.key_sha256
    assert config.serving.host == "0.0.0.0" and config.serving.port == 8000


def gateway_files() -> dict[str, str]:
    [config_map] = [d for d in by_kind("ConfigMap") if d["metadata"]["name"] == "mcp2026-gateway"]
    return config_map["data"]


def test_the_routing_rules_load() -> None:
    from mcp.gateway.routing.loader import parse_route_table

    table = parse_route_table(gateway_files()["model-routing-config.yaml"], "deploy/k8s/configmaps.yaml")
    backend = table.default.target
    assert str(backend.model) == "smollm2:1" and backend.instance_pool == "engine" and not table.routes


def test_the_gateway_config_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from mcp.gateway.config import parse_gateway_config

    [secret] = by_kind("Secret")
    monkeypatch.setenv("MCP_ENGINE_API_KEY", secret["stringData"]["engine-api-key"])  # as the Deployment sets it
    config = parse_gateway_config(yaml.safe_load(gateway_files()["gateway.yaml"]), "deploy/k8s/configmaps.yaml")
    [tenant] = config.tenants
    assert hashlib.sha256(secret["stringData"]["client-api-key"].encode()).hexdigest() in tenant.key_sha256
    assert [pool.name for pool in config.pools] == ["engine"] and not config.canary_controller
