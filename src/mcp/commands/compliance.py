"""``mcp2026 compliance report|graph``; heavy imports happen only when a command runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FRAMEWORKS = ("gdpr", "ccpa", "cn-genai", "eu-ai-act", "all")


def add_compliance_commands(commands: argparse._SubParsersAction) -> None:
    compliance = commands.add_parser("compliance", help="the compliance graph and the live compliance report "
                                                        "(docs/compliance.md)")
    actions = compliance.add_subparsers(title="actions", metavar="ACTION")
    report = actions.add_parser("report", help="every clause's status now, with its evidence, as HTML or JSON")
    report.add_argument("--framework", choices=FRAMEWORKS, default="all")
    report.add_argument("--format", choices=("html", "json"), default="html")
    report.add_argument("--out", type=Path, help="write the report here (default: standard output)")
    report.add_argument("--config", type=Path, default=Path("mcp-config.yaml"),
                        help="the server's mcp-config.yaml (default: ./mcp-config.yaml)")
    period = report.add_mutually_exclusive_group()
    period.add_argument("--since", help="audit records from this ISO date or time on (default: all)")
    period.add_argument("--period", help="audit records of the last N hours, days or weeks: 12h, 30d, 2w")
    report.add_argument("--registry", metavar="URL", help="also check the lineage of the model registry's versions")
    report.set_defaults(handler=_report)
    graph = actions.add_parser("graph", help="clauses, their controls, and the gaps (no control)")
    graph.add_argument("--framework", choices=FRAMEWORKS, default="all")
    which = graph.add_mutually_exclusive_group()
    which.add_argument("--gaps", action="store_true", help="only the applicable clauses no control covers")
    which.add_argument("--control", metavar="ID", help="the clauses this control satisfies")
    graph.set_defaults(handler=_graph)


def _report(args: argparse.Namespace) -> int:
    from mcp.governance.compliance.context import EvidenceContext, ReportPeriod
    from mcp.governance.compliance.errors import ComplianceReportError
    from mcp.governance.compliance.report import build_report, render_html

    period = ReportPeriod.parse(args.since, args.period)
    with EvidenceContext.from_config_file(args.config, period, registry_versions(args.registry)) as context:
        report = build_report(context, args.framework)
    text = render_html(report) if args.format == "html" else json.dumps(report.to_json(), indent=2,
                                                                          ensure_ascii=False) + "\n"
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ComplianceReportError(f"cannot write the report to {args.out}: {exc.strerror}") from None
    counts = ", ".join(f"{n} {status}" for status, n in report.summary().items())
    print(f"compliance report ({args.framework}, {args.format}) written to {args.out}: {counts}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    from mcp.governance.compliance.loader import load_graph

    graph = load_graph()
    if args.control:
        clauses = [c for c in graph.clauses_satisfied_by(args.control) if args.framework in ("all", c.framework)]
    elif args.gaps:
        clauses = graph.gaps(args.framework)
    else:
        clauses = graph.clauses_of(args.framework)
    for clause in clauses:
        controls = ", ".join(c.id for c in graph.controls_for(clause.id))
        needs = "not applicable" if clause.not_applicable else controls or "no control (gap)"
        print(f"{clause.id:16} {clause.article:12} {clause.title}\n{'':29} -> {needs}")
    return 0


def registry_versions(url: str | None):
    """``--registry URL`` as the reader the evidence context takes (None: no registry given)."""
    if url is None:
        return None

    def versions():
        from mcp.gateway.registry.registry import Registry

        with Registry.open(url) as registry:
            return registry.versions()

    return versions
