"""The shipped compliance graph: every clause the issue lists is there, mapped and sourced; the
queries (controls of a clause, clauses of a control, gaps) answer from it; the loader names the
file and id of each problem; the YAML and the template ship as package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcp.governance.compliance.errors import ComplianceDataError, ComplianceReportError
from mcp.governance.compliance.loader import CLAUSES, load_graph

ROOT = Path(__file__).resolve().parents[3]
EXPECTED = {
    "gdpr": ["Art. 5", "Art. 6", "Art. 7", "Art. 13", "Art. 15", "Art. 17", "Art. 20", "Art. 21", "Art. 22",
             "Art. 25", "Art. 30", "Art. 32", "Art. 35"],
    "ccpa": ["1798.100", "1798.105", "1798.106", "1798.110", "1798.115", "1798.120", "1798.121", "1798.125",
             "1798.130", "1798.135", "1798.140", "1798.150"],
    "cn-genai": ["Art. 4", "Art. 7", "Art. 8", "Art. 9", "Art. 10", "Art. 11", "Art. 12", "Art. 14", "Art. 17"],
    "eu-ai-act": ["Art. 12", "Art. 13", "Art. 14", "Art. 19", "Art. 26(6)", "Art. 50", "Art. 53"],
}
SOURCES = {"gdpr": "https://eur-lex.europa.eu/eli/reg/2016/679/oj",
           "ccpa": "https://leginfo.legislature.ca.gov/faces/codes_displaySection.xhtml?lawCode=CIV&sectionNum=",
           "cn-genai": "https://www.cac.gov.cn/", "eu-ai-act": "https://eur-lex.europa.eu/eli/reg/2024/1689/oj"}


def test_every_listed_clause_is_there_with_its_source() -> None:
    graph = load_graph()
    for framework, articles in EXPECTED.items():
        clauses = graph.clauses_of(framework)
        assert [c.article for c in clauses] == articles
        for clause in clauses:
            assert clause.title and clause.gist and clause.source.startswith(SOURCES[framework])
    assert graph.clauses["ccpa-1798.105"].source.endswith("sectionNum=1798.105")
    assert len(graph.clauses_of("all")) == sum(map(len, EXPECTED.values()))


def test_queries_controls_of_a_clause_clauses_of_a_control_and_gaps() -> None:
    graph = load_graph()
    assert [c.id for c in graph.controls_for("gdpr-17")] == ["crypto_erasure"]
    assert [c.id for c in graph.controls_for("eu-ai-act-26-6")] == ["audit_trail", "log_retention_minimum"]
    erasure = [c.id for c in graph.clauses_satisfied_by("crypto_erasure")]
    assert {"gdpr-17", "ccpa-1798.105", "cn-genai-11", "ccpa-1798.130"} <= set(erasure)
    assert "gdpr-15" not in erasure
    gaps = [c.id for c in graph.gaps()]
    assert {"gdpr-6", "gdpr-7", "gdpr-35", "ccpa-1798.106", "cn-genai-8", "cn-genai-17"} <= set(gaps)
    assert "ccpa-1798.140" not in gaps  # not applicable is not a gap
    assert "gdpr-17" not in gaps
    assert [c.id for c in graph.gaps("eu-ai-act")] == []
    assert [c.id for c in graph.concepts_without_control("cn-genai-11")] == ["RightToRectification"]
    assert graph.graph.has_edge("clause:gdpr-17", "concept:RightToErasure")
    assert graph.graph.has_edge("concept:RightToErasure", "control:crypto_erasure")


def test_unknown_framework_and_ids_are_clear_errors() -> None:
    graph = load_graph()
    with pytest.raises(ComplianceReportError, match="unknown framework 'hipaa'; use one of gdpr, ccpa"):
        graph.clauses_of("hipaa")
    with pytest.raises(ComplianceReportError, match="unknown control 'nope'"):
        graph.clauses_satisfied_by("nope")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "clauses"
    shutil.copytree(CLAUSES, folder)
    return folder


def _edit(path: Path, change) -> None:
    document = yaml.safe_load(path.read_text())
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def test_the_loader_names_file_and_id_of_every_problem(data: Path) -> None:
    _edit(data / "gdpr.yaml", lambda d: d["clauses"][5]["concepts"].append("RightToBeForgot"))
    _edit(data / "gdpr.yaml", lambda d: d["clauses"].append(dict(d["clauses"][0])))
    _edit(data / "ccpa.yaml", lambda d: d["clauses"][1].pop("source"))
    _edit(data / "controls.yaml", lambda d: d["controls"][0]["satisfies"].append("Telepathy"))
    _edit(data / "controls.yaml", lambda d: d["controls"][1].update(evidence="ask_the_intern"))
    _edit(data / "concepts.yaml", lambda d: d["concepts"].append(dict(d["concepts"][0])))
    with pytest.raises(ComplianceDataError) as caught:
        load_graph(data)
    lines = str(caught.value).splitlines()
    assert lines[0].endswith("6 problem(s) in the compliance data")
    assert "  gdpr.yaml: clause gdpr-17: concepts: unknown concept 'RightToBeForgot' (define it in concepts.yaml)" \
        in lines
    assert "  gdpr.yaml: clause gdpr-5: duplicate clause id" in lines
    assert "  ccpa.yaml: clauses[1] (ccpa-1798.105): missing field(s) source" in lines
    assert "  controls.yaml: control audit_trail: satisfies: unknown concept 'Telepathy' (define it in " \
           "concepts.yaml)" in lines
    assert any(line.startswith("  controls.yaml: control policy_versioning: evidence query 'ask_the_intern' does "
                               "not exist (known: audit_chain,") for line in lines)
    assert "  concepts.yaml: concept LawfulBasis: duplicate concept id" in lines


def test_a_clause_without_concepts_must_say_why(data: Path) -> None:
    _edit(data / "ccpa.yaml", lambda d: d["clauses"][10].pop("not_applicable"))
    with pytest.raises(ComplianceDataError, match="ccpa.yaml: clause ccpa-1798.140: maps to no concept"):
        load_graph(data)
    (data / "concepts.yaml").write_text("concepts: [")
    with pytest.raises(ComplianceDataError, match="concepts.yaml: file: not readable YAML"):
        load_graph(data)


def test_the_data_ships_in_the_package(tmp_path: Path) -> None:
    """setuptools copies the YAML and the template into the build (what wheels and installs carry)."""
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    built = tmp_path / "mcp" / "governance"
    shipped = sorted(p.name for p in (built / "compliance" / "clauses").iterdir())
    assert shipped == sorted(p.name for p in CLAUSES.iterdir())
    assert (built / "compliance" / "templates" / "report.html.j2").is_file()
    assert (built / "audit" / "migrations" / "versions" / "0002_erasures.py").is_file()
    assert len(load_graph(built / "compliance" / "clauses").clauses) == sum(map(len, EXPECTED.values()))
