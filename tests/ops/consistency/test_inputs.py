"""Suites, tolerance tables and golden files: shipped ones load, bad ones give clear errors."""

from __future__ import annotations

import json

import pytest

from mcp.backends.base import TopLogprobs
from mcp.base.errors import ConfigError
from mcp.ops.consistency.golden import Golden, GoldenMismatch, check_golden, read_golden, write_golden
from mcp.ops.consistency.metrics import ReferenceRecord
from mcp.ops.consistency.suite import load_suite
from mcp.ops.consistency.tolerances import load_tolerances


def test_shipped_suites_load():
    default, ci = load_suite("default"), load_suite("ci")
    assert default.name == "default" and len(default.prompts) >= 10
    assert {p.kind for p in default.prompts} == {"raw", "chat"}
    assert ci.prompts[0].max_tokens == 8 and len(ci.sha256) == 64


@pytest.mark.parametrize(("text", "message"), [
    ("suite: x\nversion: 1\nprompts: []\n", "prompts: List should have at least 1 item"),
    ("suite: x\nprompts: [{id: a, kind: raw, text: hi}]\n", "version: Field required"),
    ("suite: x\nversion: 1\nprompts: [{id: a, kind: raw}]\n", "a raw prompt has a non-empty 'text'"),
    ("suite: x\nversion: 1\nprompts: [{id: a, kind: chat, text: hi}]\n", "a chat prompt has 'messages'"),
    ("suite: x\nversion: 1\nprompts: [{id: a, kind: poem, text: hi}]\n", "prompts.0.kind"),
    ("suite: x\nversion: 1\ntemperature: 0.7\nprompts: [{id: a, kind: raw, text: hi}]\n", "temperature: Extra inputs"),
    ("suite: x\nversion: 1\nprompts: [{id: a, kind: raw, text: hi}, {id: a, kind: raw, text: ho}]\n",
     "prompt ids must be unique"),
    ("suite: [unclosed\n", "is not valid YAML"),
])
def test_bad_suites_are_refused_with_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_suite(str(path))


def test_a_missing_suite_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match=r"neither a file nor a shipped suite \(ci, default\)"):
        load_suite("/nonexistent/suite.yaml")


def test_the_shipped_tolerance_table_has_rules_for_the_ci_pairs():
    table = load_tolerances()
    for candidate in ("native-fp32", "native-int4", "native-int8", "llamacpp", "http"):
        assert table.rule_for("transformers", candidate).bounds
    with pytest.raises(ConfigError, match="no rule for reference 'llamacpp' and candidate 'native-fp32'"):
        table.rule_for("llamacpp", "native-fp32")


def test_bad_tolerance_tables_are_refused(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\nrules: [{reference: a, candidate: b, min_top1_agreement: 1.5}]\n")
    with pytest.raises(ConfigError, match="rules.0.min_top1_agreement"):
        load_tolerances(path)


def _golden(sha: str = "a" * 64) -> Golden:
    record = ReferenceRecord("p", (1, 2), (3,), None, (TopLogprobs((3, 4), (-0.1, -2.5)),) * 3)
    return Golden("transformers", {"transformers": "5"}, sha, "m.gguf", "ci", 1, "b" * 64, 2, (record,))


def test_golden_files_round_trip_and_refuse_another_model(tmp_path):
    path = tmp_path / "golden.json"
    write_golden(path, _golden())
    golden = read_golden(path)
    assert golden == _golden()
    with pytest.raises(GoldenMismatch, match=f"sha256 {'a' * 64}, but this model's sha256 is {'c' * 64}"):
        check_golden(golden, path, "c" * 64, load_suite("ci"))


@pytest.mark.parametrize(("content", "message"), [
    ("{", "is not JSON"), ('{"format": "other"}', "is not a version-1 golden file"),
    (json.dumps({"format": "mcp2026-consistency-golden", "version": 1}), "incomplete or damaged"),
])
def test_bad_golden_files_are_refused(tmp_path, content, message):
    path = tmp_path / "golden.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        read_golden(path)
