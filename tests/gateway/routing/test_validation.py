"""Bad routing files are refused with the route and the field named."""

from __future__ import annotations

import pytest

from mcp.gateway.errors import RoutingConfigError
from mcp.gateway.routing import load_route_table, parse_route_table

DEFAULT = "default: {backend: {model_id: 'm:1'}}\n"


def _error(text: str) -> str:
    with pytest.raises(RoutingConfigError) as caught:
        parse_route_table(text, source="routes.yaml")
    return str(caught.value)


def test_bad_yaml():
    assert "routes.yaml is not valid YAML" in _error("routes: [\n  - name: x\n  bad: : :")


def test_not_a_mapping():
    assert "a routing file is a mapping" in _error("- just a list")


def test_unknown_field_names_route_and_field():
    text = "routes:\n  - name: premium\n    conditons: {tenant: a}\n    backend: {model_id: 'm:1'}\n" + DEFAULT
    assert "route 'premium' (routes[0]): conditons: Extra inputs are not permitted" in _error(text)


def test_weights_not_summing_to_100():
    text = """routes:
  - name: ab
    split:
      arms:
        - {name: a, weight: 60, backend: {model_id: 'm:1'}}
        - {name: b, weight: 30, backend: {model_id: 'm:2'}}
""" + DEFAULT
    assert "route 'ab' (routes[0]): split: arm weights must sum to 100, they sum to 90 (a=60, b=30)" in _error(text)


def test_bad_model_id_and_stage():
    message = _error("routes:\n  - name: r\n    backend: {model_id: 'nameonly'}\n" + DEFAULT)
    assert "route 'r' (routes[0]): backend.model_id: 'nameonly' is neither name:version nor name@stage" in message
    assert "after '@' comes a stage" in _error("default: {backend: {model_id: 'm@archived'}}")


def test_several_errors_are_all_listed():
    text = """routes:
  - name: r1
    conditions: {min_input_tokens: 10, max_input_tokens: 5, sla_class: urgent}
    backend: {model_id: 'm:1', timeout_ms: 0}
  - name: r1
    backend: {model_id: 'm:1'}
    split: {arms: [{name: a, weight: 100, backend: {model_id: 'm:1'}}]}
"""
    message = _error(text)
    assert "route 'r1' (routes[0]): conditions.sla_class[0]: Input should be 'critical', 'high'" in message
    assert "route 'r1' (routes[0]): backend.timeout_ms: Input should be greater than 0" in message
    assert "route 'r1' (routes[1]): give exactly one of backend or split" in message
    assert "default route: Field required" in message


def test_inverted_token_range_and_duplicate_names():
    bad_range = "routes:\n  - {name: r, conditions: {min_input_tokens: 9, max_input_tokens: 1}, backend: {model_id: 'm:1'}}\n"
    assert "min_input_tokens 9 is above max_input_tokens 1" in _error(bad_range + DEFAULT)
    twice = "routes:\n  - {name: r, backend: {model_id: 'm:1'}}\n  - {name: r, backend: {model_id: 'm:2'}}\n"
    assert "two routes are named 'r'" in _error(twice + DEFAULT)


def test_missing_file(tmp_path):
    with pytest.raises(RoutingConfigError, match="cannot be read"):
        load_route_table(tmp_path / "nope.yaml")
