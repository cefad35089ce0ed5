"""deploy/helm/mcp2026: the values the templates read exist, the chart makes the kinds of
deploy/k8s, and its rule files are deploy/prometheus's.

No helm binary can be installed on the development and CI machines (no Debian package; the one
pip package embedding helm needs Python 3.12): ``helm lint`` and ``helm template`` run only where
helm is on the PATH, and then the render must equal deploy/k8s.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

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
    assert charted == plain


def test_the_charts_rule_files_are_deploy_prometheus() -> None:
    for name in ("recording-rules.yaml", "alerting-rules.yaml"):
        copy, original = CHART / "files" / "prometheus" / name, ROOT / "deploy" / "prometheus" / name
        assert copy.read_bytes() == original.read_bytes()


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "mcp2026" and chart["type"] == "application"


def test_helm_renders_the_plain_manifests(tmp_path: Path) -> None:
    helm = shutil.which("helm")
    if helm is None:
        pytest.skip("helm is not on the PATH: install Helm 3 (https://helm.sh/docs/intro/install/) to run helm "
                    "lint/template; no package registry these CI machines reach carries it")
    lint = subprocess.run([helm, "lint", str(CHART)], capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    rendered = subprocess.run([helm, "template", "mcp2026", str(CHART)], capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    key = lambda doc: (doc["kind"], doc["metadata"]["name"])  # noqa: E731
    ours = sorted((d for d in yaml.safe_load_all(rendered.stdout) if d), key=key)
    plain = sorted((d for p in (ROOT / "deploy" / "k8s").glob("*.yaml")
                    for d in yaml.safe_load_all(p.read_text()) if d), key=key)
    assert [key(d) for d in ours] == [key(d) for d in plain]
