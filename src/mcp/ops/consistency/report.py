"""The matrix report: every candidate against the reference, with figures, bounds and verdicts,
as JSON (every prompt's figures) and as Markdown (one table per suite, then the checks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from mcp.ops.consistency.runner import CandidateResult


@dataclass(frozen=True)
class MatrixReport:
    suite: dict  # name, version, sha256, path
    model: dict  # name, sha256
    reference: dict  # name, source ("engine" or the golden file), versions
    tolerances: str  # the table's path
    candidates: tuple[CandidateResult, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.candidates)

    @property
    def violations(self) -> list[str]:
        return [f"{c.name}: {check.bound} {_number(check.value)} (limit {_number(check.limit)})"
                for c in self.candidates for check in c.checks if check.passed is False]


def to_json(report: MatrixReport) -> dict:
    return {"passed": report.passed, "violations": report.violations, "suite": report.suite,
            "model": report.model, "reference": report.reference, "tolerances": report.tolerances,
            "candidates": [_candidate_json(c) for c in report.candidates]}


def _candidate_json(result: CandidateResult) -> dict:
    return {"name": result.name, "description": result.description, "versions": result.versions,
            "scores": result.scores, "kv_bytes_per_token": result.kv_bytes_per_token, "passed": result.passed,
            "summary": dataclasses.asdict(result.summary), "rule": dataclasses.asdict(result.rule),
            "checks": [dataclasses.asdict(c) for c in result.checks],
            "prompts": [dataclasses.asdict(r) for r in result.rows]}


COLUMNS = ("candidate", "positions", "top-1 agree", "logits MSE", "KL (nats)", "top-k |Δlogprob|",
           "token match", "first divergence", "ms/token", "KV bytes/token", "verdict")


def to_markdown(report: MatrixReport) -> str:
    ref = report.reference
    lines = [f"# Consistency: suite {report.suite['name']} v{report.suite['version']}, reference {ref['name']} "
             f"({ref['source']})", "",
             f"model {report.model['name']} sha256 `{report.model['sha256']}`; tolerances {report.tolerances}", "",
             _row(COLUMNS), _row(["---"] * len(COLUMNS))]
    lines += [_row(_cells(c)) for c in report.candidates]
    lines += ["", *_checks(report.candidates), "", f"**{'PASSED' if report.passed else 'FAILED'}**"]
    return "\n".join(lines) + "\n"


def _cells(result: CandidateResult) -> list[str]:
    s = result.summary
    divergence = "none" if s.first_divergence is None else f"{s.first_divergence} ({s.num_prompts_diverged} prompts)"
    return [f"{result.name}", str(s.num_positions), _percent(s.top1_agreement), _number(s.mse), _number(s.kl),
            _number(s.topk_logprob_mae), _percent(s.token_match), divergence, f"{s.ms_per_token:.1f}",
            str(result.kv_bytes_per_token or "n/a"), "pass" if result.passed else "FAIL"]


def _checks(candidates: Sequence[CandidateResult]) -> list[str]:
    lines = ["| candidate | rule | bound | limit | value | result |", "|---|---|---|---|---|---|"]
    for c in candidates:
        rule = f"{c.rule.reference} / {c.rule.candidate}"
        for check in c.checks:
            verdict = {True: "pass", False: "**FAIL**", None: "n/a"}[check.passed]
            lines.append(f"| {c.name} | {rule} | {check.bound} | {_number(check.limit)} | {_number(check.value)} "
                         f"| {verdict} |")
    return lines


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"
