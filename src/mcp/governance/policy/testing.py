"""``run_rego_tests(folder)``: a bundle's unit tests, run with regopy.

Two forms, both in ``*_test.rego`` modules:
- ``opa test``'s: every rule ``test_*`` must evaluate to true;
- cases: a rule ``cases`` holding ``{"name", "stage" (default input), "input", "data" (merged
  over the bundle's data), "expect": {"action", "rules", "redact_kinds"?, "reroute_model"?}}``.
  The runner sets each case's input as the server does, then checks the stage's decision.
  (rego-cpp 1.x crashes on ``with input as`` over rules that call built-ins, so cases are how
  policies that read the input are tested here.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regopy

from mcp.governance.errors import PolicyError
from mcp.governance.policy.bundle import ENTRYPOINTS, PolicySource, compile_policy
from mcp.governance.policy.decision import Decision, parse_decision
from mcp.governance.policy.engine import read_answer

_PACKAGE = re.compile(r"^package\s+([\w.]+)", re.MULTILINE)
_TEST_RULE = re.compile(r"^(test_\w+)\b", re.MULTILINE)
_CASES = re.compile(r"^cases\s*:?=", re.MULTILINE)


@dataclass(frozen=True)
class TestOutcome:
    name: str
    passed: bool
    detail: str = ""


def run_rego_tests(folder: str | Path) -> list[TestOutcome]:
    """Every test rule and case of the bundle in ``folder``, with whether it passed."""
    source = PolicySource.read(folder)
    rules, case_points = _test_points(source)
    compiled = compile_policy(source, (*rules, *case_points), with_tests=True)
    runner = regopy.Interpreter()
    runner.set_input(regopy.Input({}))
    outcomes = [TestOutcome(point, _query(runner, compiled.bundle, point) is True) for point in rules]
    for point in case_points:
        for case in _query(runner, compiled.bundle, point) or ():
            outcomes.append(_run_case(source, point, case))
    return outcomes


def _test_points(source: PolicySource) -> tuple[list[str], list[str]]:
    rules, cases = [], []
    for name, text in source.tests.items():
        package = _PACKAGE.search(text)
        if package is None:
            raise PolicyError(f"{source.folder / name}: no package line")
        path = package.group(1).replace(".", "/")
        rules += [f"{path}/{rule}" for rule in dict.fromkeys(_TEST_RULE.findall(text))]
        if _CASES.search(text):
            cases.append(f"{path}/cases")
    return rules, cases


def _run_case(source: PolicySource, point: str, case: dict[str, Any]) -> TestOutcome:
    name = f"{point}: {case.get('name', '?')}"
    stage = case.get("stage", "input")
    data = _merged(source.data, case.get("data") or {})
    compiled = compile_policy(source, data=data)
    runner = regopy.Interpreter()
    runner.set_input(regopy.Input(case.get("input", {})))
    decision = parse_decision(stage, _query(runner, compiled.bundle, ENTRYPOINTS[stage]), source.version)
    got = _observed(decision, case.get("expect", {}))
    passed = got == case.get("expect")
    return TestOutcome(name, passed, "" if passed else f"expected {case.get('expect')}, got {got}")


def _observed(decision: Decision, expect: dict[str, Any]) -> dict[str, Any]:
    got: dict[str, Any] = {"action": decision.action, "rules": decision.as_record()["rules"]}
    if "redact_kinds" in expect:
        got["redact_kinds"] = sorted(decision.redact_kinds)
    if "reroute_model" in expect:
        got["reroute_model"] = decision.reroute_model
    return got


def _query(runner: regopy.Interpreter, bundle: regopy.Bundle, point: str) -> Any:
    answer = str(runner.query_bundle_entrypoint(bundle, point))
    return None if answer == "undefined" else read_answer(answer, point)


def _merged(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
            else value
    return merged
