"""The worker's start message holds what the engine needs and none of the server's secrets."""

from __future__ import annotations

import dataclasses
import typing

import orjson
import yaml

from mcp.config.isolation import WorkerLimits
from mcp.config.runtime import load_config
from mcp.engine.options import EngineOptions
from mcp.serving.isolation.models import _engine_settings
from mcp.serving.isolation.spec import EngineSettings, WorkerSpec, worker_environment


def test_the_environment_is_an_allowlist():
    environ = {"PATH": "/usr/bin", "LC_ALL": "C", "OMP_NUM_THREADS": "2", "PYTHONPATH": "/src",
               "OPENAI_API_KEY": "sk-secret", "MCP_AUDIT_URL": "postgresql://u:p@db/audit",
               "AWS_SECRET_ACCESS_KEY": "x", "MCP_HOME": "/home/m", "HOME": "/root"}
    assert worker_environment(environ) == {"PATH": "/usr/bin", "LC_ALL": "C", "OMP_NUM_THREADS": "2",
                                           "PYTHONPATH": "/src"}


def test_the_spec_round_trips_through_json():
    spec = WorkerSpec("m:1", "/models/m.mcp", EngineSettings(device="cpu", precision_overrides=(("*.q", "fp32"),),
                                                              num_threads=2),
                      {"policy": "slo"}, WorkerLimits(max_open_files=300, network_namespace=False),
                      ({"pcr": 10, "digest": "ab"},))
    wire = orjson.loads(orjson.dumps(spec.to_wire()))
    assert wire["op"] == "start"
    assert WorkerSpec.from_wire(wire) == spec
    assert not {"tenants", "key_sha256", "audit_key_file", "governance"} & set(wire)


# The YAML value (not a default) and the engine option it becomes, for the options whose type
# alone does not give one; a bool is flipped and a Literal takes another of its choices.
_SET_IN_YAML = {"device": ("cpu", "cpu"), "max_context": (77, 77),
                "precision_overrides": ({"*.q_proj.weight": "fp32"}, (("*.q_proj.weight", "fp32"),))}


def _another_value(option: dataclasses.Field, kind: object) -> tuple[object, object]:
    if option.name in _SET_IN_YAML:
        return _SET_IN_YAML[option.name]
    if kind is bool:
        return not option.default, not option.default
    choices = [choice for choice in typing.get_args(kind) if choice != option.default]
    assert choices, f"give engine option {option.name} a YAML value in _SET_IN_YAML"
    return choices[0], choices[0]


def test_every_engine_option_set_in_yaml_reaches_the_worker_engine(tmp_path):
    """An option declared once, in EngineOptions, is a runtime: key, and what the YAML says is
    what the worker loads its engine with, after the spec's trip through JSON."""
    kinds = typing.get_type_hints(EngineOptions)
    values = {option.name: _another_value(option, kinds[option.name]) for option in dataclasses.fields(EngineOptions)}
    path = tmp_path / "mcp-config.yaml"
    path.write_text(yaml.safe_dump({"runtime": {name: yaml_value for name, (yaml_value, _) in values.items()}}))
    config = load_config(path)
    spec = WorkerSpec("m:1", "/models/m.mcp", _engine_settings(config, None), {}, WorkerLimits())
    received = WorkerSpec.from_wire(orjson.loads(orjson.dumps(spec.to_wire())))
    assert EngineOptions.of(received.engine) == EngineOptions(**{name: value for name, (_, value) in values.items()})
    assert EngineOptions.of(config) == EngineOptions.of(received.engine)  # what an in-process Session loads with
