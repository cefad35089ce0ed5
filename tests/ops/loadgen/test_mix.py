"""Mixes and SLO tables from the command line."""

from __future__ import annotations

import numpy as np
import pytest

from mcp.base.errors import InvalidRequestError
from mcp.engine.scheduler.slo import SLOTarget
from mcp.ops.loadgen.mix import SLOTable, parse_class_mix, parse_mix, parse_slo_table


def test_weights_are_normalized_and_names_without_weights_are_equal():
    assert parse_class_mix("critical=1, low=3").items == (("critical", 0.25), ("low", 0.75))
    assert parse_mix("a,b,c,d", "--tenants").to_dict() == {"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}
    assert parse_mix("a=0,b=2", "--tenants").draw(np.random.default_rng(0), 50) == ["b"] * 50


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--class-mix is empty"),
        ("urgent=1", "--class-mix: unknown name 'urgent'; use critical, high, medium, low"),
        ("high=x", "--class-mix: weight 'x' of 'high' is not a number"),
        ("high=-1", "--class-mix: weight of 'high' must be a finite number >= 0"),
        ("high=1,high=2", "'high' is given twice"),
        ("high=0,low=0", "the weights sum to 0"),
        ("=3", "has no name"),
    ],
)
def test_bad_class_mix(text, message):
    with pytest.raises(InvalidRequestError, match=message):
        parse_class_mix(text)


def test_slo_table_defaults_and_overrides():
    table = parse_slo_table("critical=0.5/0.05, low=30/2")
    assert table.names == ("critical", "high", "medium", "low")
    assert table.target("critical") == SLOTarget(0.5, 0.05)
    assert table.target("high") == SLOTable.default().target("high")
    assert table.target("low") == SLOTarget(30.0, 2.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("urgent=1/0.1", "--slo: unknown class 'urgent'"),
        ("high=1", "--slo: high=.1. is not TTFT/TPOT in seconds; e.g. high=1.0/0.1"),
        ("high=fast/0.1", r"--slo: high='fast/0.1' is not TTFT/TPOT in seconds"),
        ("high=0/0.1", "both targets must be positive"),
    ],
)
def test_bad_slo_table(text, message):
    with pytest.raises(InvalidRequestError, match=message):
        parse_slo_table(text)
