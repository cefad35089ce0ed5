"""``render_html(report)``: the report as one self-contained HTML page (print CSS included).

Rendered with jinja2 and autoescaping on: every clause text, fact and path is escaped.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from mcp.governance.compliance.report import ComplianceReport

TEMPLATES = Path(__file__).resolve().parent / "templates"
_ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(report: ComplianceReport) -> str:
    data = report.to_json()
    return _ENVIRONMENT.get_template("report.html.j2").render(
        report=data, by_framework=[(f, [c for c in data["clauses"] if c["framework"] == f["id"]])
                                   for f in data["frameworks"]],
        css_class={"met": "met", "partly": "partly", "not met": "notmet", "not applicable": "na"})
