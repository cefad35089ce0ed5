"""The worker's start message holds what the engine needs and none of the server's secrets."""

from __future__ import annotations

import orjson

from mcp.config.isolation import WorkerLimits
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
