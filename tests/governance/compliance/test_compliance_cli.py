"""`mcp2026 compliance report|graph` as a user runs them: files written, what stdout says,
one-line errors with exit 2 for a bad period, a missing config, an unwritable output."""

from __future__ import annotations

import json
import pytest

from mcp.commands.cli import main


@pytest.mark.parametrize("audit_url", ["sqlite"], indirect=True)
def test_report_json_and_html_files(write_config, system, capsys: pytest.CaptureFixture) -> None:
    config, out = write_config(), system["folder"] / "report.json"
    assert main(["compliance", "report", "--config", str(config), "--framework", "gdpr", "--format", "json",
                 "--out", str(out), "--period", "30d"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"compliance report (gdpr, json) written to {out}: ")
    report = json.loads(out.read_text())
    assert report["framework"] == "gdpr" and {c["framework"] for c in report["clauses"]} == {"gdpr"}
    assert report["period"]["since"] is not None
    assert f"{report['summary']['met']} met" in said
    assert main(["compliance", "report", "--config", str(config), "--framework", "eu-ai-act"]) == 0
    html = capsys.readouterr().out
    assert html.startswith("<!DOCTYPE html>") and "Record-keeping" in html and "@media print" in html


@pytest.mark.parametrize("audit_url", ["sqlite"], indirect=True)
def test_report_errors_are_one_line(write_config, system, capsys: pytest.CaptureFixture) -> None:
    config = write_config()
    assert main(["compliance", "report", "--config", str(config), "--period", "a while"]) == 2
    assert capsys.readouterr().err == ("mcp2026: error: --period 'a while': write a number and a unit h, d or w "
                                       "(e.g. 30d)\n")
    assert main(["compliance", "report", "--config", str(config), "--since", "yesterday"]) == 2
    assert "--since 'yesterday': write an ISO date or time" in capsys.readouterr().err
    assert main(["compliance", "report", "--config", str(system["folder"] / "nope.yaml")]) == 2
    assert capsys.readouterr().err == f"mcp2026: error: config file {system['folder'] / 'nope.yaml'} does not exist\n"
    unwritable = system["folder"] / "no" / "r.html"
    assert main(["compliance", "report", "--config", str(config), "--out", str(unwritable)]) == 2
    assert "cannot write the report to" in capsys.readouterr().err


def test_graph_lists_clauses_controls_and_gaps(capsys: pytest.CaptureFixture) -> None:
    assert main(["compliance", "graph", "--framework", "gdpr", "--gaps"]) == 0
    gaps = capsys.readouterr().out
    assert "gdpr-6           Art. 6       Lawfulness of processing" in gaps and "no control (gap)" in gaps
    assert "gdpr-17" not in gaps
    assert main(["compliance", "graph", "--control", "crypto_erasure"]) == 0
    erasure = capsys.readouterr().out
    assert "ccpa-1798.105" in erasure and "cn-genai-11" in erasure and "-> crypto_erasure" in erasure
    assert main(["compliance", "graph", "--control", "shredder"]) == 2
    assert "unknown control 'shredder'" in capsys.readouterr().err
