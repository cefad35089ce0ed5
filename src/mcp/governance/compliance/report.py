"""``build_report(context, framework)``: every clause's status now, with the evidence behind it.

Each control the chosen clauses need runs its evidence query once against the live system.
A concept's status combines its controls' (all met: met; none met or partly: not met;
else partly; no control at all: not met, a gap); a clause's combines its concepts' the
same way. ``ComplianceReport.to_json()`` is the stable schema documented in docs/compliance.md;
``render_html(report)`` makes it one self-contained HTML page (print CSS included), rendered
by jinja2 with autoescaping on: every clause text, fact and path is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from mcp.base.errors import MCPError
from mcp.governance.compliance.context import EvidenceContext, iso_time
from mcp.governance.compliance.graph import Clause, ComplianceGraph, Control
from mcp.governance.compliance.status import ControlResult, Status, combine, result

SCHEMA = "mcp2026.compliance-report/1"
TEMPLATES = Path(__file__).resolve().parent / "templates"
_TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_CSS_CLASS = {"met": "met", "partly": "partly", "not met": "notmet", "not applicable": "na"}


@dataclass(frozen=True)
class Evidence:
    """One line of a clause's evidence: a control's status and facts, or a concept no control covers."""

    status: Status
    facts: tuple[str, ...]
    control: str | None = None  # None: the concept has no control (a gap), or the clause is not applicable
    concept: str | None = None

    def to_json(self, graph: ComplianceGraph) -> dict[str, Any]:
        return {"control": self.control, "control_title": graph.controls[self.control].title if self.control else None,
                "concept": self.concept, "concept_title": graph.concepts[self.concept].title if self.concept else None,
                "status": self.status.value, "facts": list(self.facts)}


@dataclass(frozen=True)
class ClauseResult:
    clause: Clause
    status: Status
    controls: tuple[str, ...]
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class ComplianceReport:
    generated_at: str  # ISO 8601, UTC
    framework: str  # one framework id, or "all"
    config: str  # the config file the evidence came from
    period_since: str | None
    period_until: str
    graph: ComplianceGraph
    clauses: tuple[ClauseResult, ...]
    controls: dict[str, ControlResult]

    def summary(self) -> dict[str, int]:
        return {status.value: sum(c.status is status for c in self.clauses) for status in Status}

    def to_json(self) -> dict[str, Any]:
        frameworks = sorted({c.clause.framework for c in self.clauses}, key=list(self.graph.frameworks).index)
        return {
            "schema": SCHEMA, "generated_at": self.generated_at, "framework": self.framework, "config": self.config,
            "period": {"since": self.period_since, "until": self.period_until},
            "summary": self.summary(),
            "frameworks": [vars(self.graph.frameworks[f]) for f in frameworks],
            "clauses": [_clause_json(c, self.graph) for c in self.clauses],
            "controls": [{"id": control_id, "title": self.graph.controls[control_id].title,
                          "status": found.status.value, "evidence": list(found.evidence),
                          "clauses": [c.id for c in self.graph.clauses_satisfied_by(control_id)
                                      if self.framework in ("all", c.framework)]}
                         for control_id, found in self.controls.items()],
        }


def _clause_json(found: ClauseResult, graph: ComplianceGraph) -> dict[str, Any]:
    clause = found.clause
    return {"id": clause.id, "framework": clause.framework, "article": clause.article, "title": clause.title,
            "gist": clause.gist, "source": clause.source, "status": found.status.value,
            "concepts": list(clause.concepts), "controls": list(found.controls),
            "evidence": [e.to_json(graph) for e in found.evidence]}


def build_report(context: EvidenceContext, framework: str = "all", graph: ComplianceGraph | None = None
                 ) -> ComplianceReport:
    """The report for ``framework`` (gdpr | ccpa | cn-genai | eu-ai-act | all), computed now."""
    from mcp.governance.compliance.loader import load_graph

    graph = graph or load_graph()
    clauses = graph.clauses_of(framework)
    needed = dict.fromkeys(c.id for clause in clauses for c in graph.controls_for(clause.id))
    controls = {control_id: run_query(graph.controls[control_id], context) for control_id in needed}
    return ComplianceReport(
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), framework=framework,
        config=context.source,
        period_since=iso_time(context.period.since_us) if context.period.since_us is not None else None,
        period_until=iso_time(context.period.until_us), graph=graph,
        clauses=tuple(_clause_result(clause, graph, controls) for clause in clauses), controls=controls)


def run_query(control: Control, context: EvidenceContext) -> ControlResult:
    """The control's evidence query; an MCPError or a database failure makes it 'not met', saying why."""
    from sqlalchemy.exc import DBAPIError

    from mcp.governance.compliance.queries import EVIDENCE_QUERIES

    try:
        return EVIDENCE_QUERIES[control.evidence](context)
    except MCPError as exc:
        return result(Status.NOT_MET, str(exc))
    except DBAPIError as exc:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return result(Status.NOT_MET, f"the audit database failed while checking: {detail}")


def _clause_result(clause: Clause, graph: ComplianceGraph, controls: dict[str, ControlResult]) -> ClauseResult:
    if clause.not_applicable is not None:
        return ClauseResult(clause, Status.NOT_APPLICABLE, (), (Evidence(Status.NOT_APPLICABLE,
                                                                         (clause.not_applicable,)),))
    evidence: list[Evidence] = []
    concept_statuses = []
    for concept_id in clause.concepts:
        covering = [c.id for c in graph.controls.values() if concept_id in c.satisfies]
        concept_statuses.append(combine(controls[c].status for c in covering))
        if not covering:
            evidence.append(Evidence(Status.NOT_MET, (f"no control of MCP 2026 covers "
                                                      f"{graph.concepts[concept_id].title.lower()} ({concept_id}): "
                                                      "the operator must meet it by organisational measures",),
                                     concept=concept_id))
    needed = tuple(c.id for c in graph.controls_for(clause.id))
    evidence[:0] = [Evidence(controls[c].status, controls[c].evidence, control=c) for c in needed]
    return ClauseResult(clause, combine(concept_statuses), needed, tuple(evidence))


def render_html(report: ComplianceReport) -> str:
    data = report.to_json()
    by_framework = [(f, [c for c in data["clauses"] if c["framework"] == f["id"]]) for f in data["frameworks"]]
    return _TEMPLATES.get_template("report.html.j2").render(report=data, by_framework=by_framework,
                                                             css_class=_CSS_CLASS)
