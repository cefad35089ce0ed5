"""The HTML report as a reader sees it: rendered by headless Chromium (its DOM after layout,
and a printed PDF), with the clause titles, statuses and evidence on the page; text from the
data is escaped, never markup."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp.governance.compliance.context import EvidenceContext
from mcp.governance.compliance.report import build_report, render_html

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is missing: apt-get install chromium "
                                                             "(bash .ci/browser installs it)")


def _chromium(*args: str) -> str:
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *args], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _visible_text(dom: str) -> str:
    body = re.sub(r"(?s)<(style|script)[^>]*>.*?</\1>", "", dom)
    text = re.sub(r"<[^>]+>", " ", body)
    return re.sub(r"\s+", " ", text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


@needs_chromium
@pytest.mark.parametrize("audit_url", ["sqlite"], indirect=True)
def test_chromium_shows_clauses_statuses_and_evidence(write_config, system, tmp_path: Path) -> None:
    with EvidenceContext.from_config_file(write_config(audit=False)) as context:
        report = build_report(context, "eu-ai-act")
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    seen = _visible_text(_chromium("--dump-dom", page.as_uri()))
    assert "Artificial Intelligence Act (EU) 2024/1689" in seen
    assert "Art. 12 Record-keeping" in seen and "Art. 26(6) Obligations of deployers of high-risk AI systems" in seen
    assert re.search(r"Art\. 12 Record-keeping partly", seen)
    assert re.search(r"Art\. 26\(6\) Obligations of deployers of high-risk AI systems not met", seen)
    assert "serving.governance.audit is false: no audit trail is kept" in seen
    assert "No control: Training data governance (TrainingDataGovernance)" in seen
    assert "signature tiny.mcp.sig present, not verified" in seen
    pdf = tmp_path / "report.pdf"
    _chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
    assert pdf.read_bytes().startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", pdf.read_bytes())) >= 2


def test_text_from_the_data_is_escaped(write_config, system) -> None:
    with EvidenceContext.from_config_file(write_config(governance=False)) as context:
        report = build_report(context, "ccpa")
    clause = report.clauses[0].clause
    forged = type(report.clauses[0])(clause.__class__(**{**vars(clause), "title": "<script>alert(1)</script>"}),
                                     *(getattr(report.clauses[0], f) for f in ("status", "controls", "evidence")))
    html = render_html(type(report)(**{**vars(report), "clauses": (forged, *report.clauses[1:])}))
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
