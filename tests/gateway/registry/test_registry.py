"""The registry on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from mcp.gateway.errors import (
    DuplicateVersionError,
    RegistryUnavailableError,
    StageTransitionError,
    UnknownModelError,
    UnknownVersionError,
)
from mcp.base.errors import MCPError
from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage


def test_register_records_every_field(registry, artifact):
    version = registry.register(artifact, version="1")
    again = registry.get("m", "1")
    assert again == version
    assert (again.stage, again.sha256, again.size_bytes, again.parameter_count) == (Stage.STAGING, "ab" * 32, 1234, 1000)
    assert (again.architecture, again.quantization, again.context_length, again.license) == (
        "llama", "Q4_1", 2048, "apache-2.0")
    assert again.lineage == {"general.name": "m"} and again.signature_status == "unsigned"
    assert again.created_by == "tester" and again.created_at.tzinfo is not None


def test_duplicate_version_is_refused_and_logs_nothing(registry, artifact):
    registry.register(artifact, version="1")
    with pytest.raises(DuplicateVersionError, match="m:1 is already registered"):
        registry.register(artifact, version="1")
    assert [c.action for c in registry.changes()] == ["model.create", "version.add"]


def test_unknown_model_and_version(registry, artifact):
    with pytest.raises(UnknownModelError, match="no model named 'nope'"):
        registry.get("nope", "1")
    registry.register(artifact, version="1")
    with pytest.raises(UnknownVersionError, match="no version '9' .*versions: 1"):
        registry.promote("m", "9", Stage.PRODUCTION)


def test_stage_transitions_are_validated(registry, artifact):
    registry.register(artifact, version="1", stage=Stage.PRODUCTION)
    with pytest.raises(StageTransitionError, match="in production; it cannot move to staging"):
        registry.promote("m", "1", Stage.STAGING)
    with pytest.raises(StageTransitionError, match="cannot move to production"):
        registry.promote("m", "1", Stage.PRODUCTION)
    assert registry.archive("m", "1").stage == Stage.ARCHIVED
    with pytest.raises(StageTransitionError, match="archived; it cannot move to canary"):
        registry.promote("m", "1", Stage.CANARY)
    assert registry.promote("m", "1", Stage.STAGING).stage == Stage.STAGING


def test_production_replaces_production_and_one_canary_at_a_time(registry, artifact):
    for label in ("1", "2", "3"):
        registry.register(artifact, version=label)
    registry.promote("m", "1", Stage.PRODUCTION)
    registry.promote("m", "2", Stage.CANARY)
    with pytest.raises(StageTransitionError, match="already has a canary \\(2\\)"):
        registry.promote("m", "3", Stage.CANARY)
    registry.promote("m", "2", Stage.PRODUCTION)
    assert {v.version: v.stage for v in registry.versions("m")} == {
        "1": Stage.ARCHIVED, "2": Stage.PRODUCTION, "3": Stage.STAGING}
    assert registry.in_stage("m", Stage.PRODUCTION).version == "2"
    with pytest.raises(UnknownVersionError, match="no version in canary"):
        registry.in_stage("m", Stage.CANARY)


def test_change_log_records_who_what_before_after(registry, artifact):
    registry.register(artifact, version="1")
    registry.promote("m", "1", Stage.CANARY)
    stage_change = registry.changes("m:1")[-1]
    assert (stage_change.action, stage_change.actor, stage_change.subject) == ("version.stage", "tester", "m:1")
    assert (stage_change.before["stage"], stage_change.after["stage"]) == ("staging", "canary")
    assert [c.action for c in registry.changes("m")] == ["model.create", "version.add", "version.stage"]
    assert [c.id for c in registry.changes(limit=2)] == [c.id for c in registry.changes()][-2:]


@pytest.mark.parametrize("statement", ["UPDATE change_log SET actor = 'mallory'", "DELETE FROM change_log"])
def test_change_log_is_append_only_in_the_database(registry, artifact, statement):
    registry.register(artifact, version="1")
    with pytest.raises(DBAPIError, match="append-only"):
        with registry.engine.begin() as connection:
            connection.execute(text(statement))
    assert [c.actor for c in registry.changes()] == ["tester", "tester"]


def test_deployment_state_is_kept_and_logged(registry, artifact):
    registry.register(artifact, version="1")
    registry.deploy("m", "1", "pool-a", role="canary", traffic_percent=5)
    registry.deploy("m", "1", "pool-a", role="canary", traffic_percent=20)
    (deployment,) = registry.deployments("m", "1")
    assert (deployment.instance_pool, deployment.role, deployment.traffic_percent) == ("pool-a", "canary", 20)
    last = registry.changes("m:1")[-1]
    assert (last.action, last.before["traffic_percent"], last.after["traffic_percent"]) == ("deployment.set", 5, 20)
    with pytest.raises(MCPError, match="traffic_percent"):
        registry.deploy("m", "1", "pool-a", traffic_percent=101)


def test_reopening_keeps_everything(registry_url, artifact):
    with Registry.open(registry_url) as first:
        first.register(artifact, version="1")
    with Registry.open(registry_url) as second:
        assert [v.model_id for v in second.versions()] == ["m:1"]


def test_unreachable_database_is_a_clear_error():
    with pytest.raises(RegistryUnavailableError, match="cannot be reached .*127.0.0.1.*--registry"):
        Registry.open("postgresql+psycopg://postgres@127.0.0.1:1/none")


def test_unsupported_url_is_a_clear_error():
    with pytest.raises(RegistryUnavailableError, match="only sqlite:/// and postgresql"):
        Registry.open("mysql://localhost/x")
