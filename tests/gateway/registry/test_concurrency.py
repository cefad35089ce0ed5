"""Concurrent writers on one model, as threads and as processes, on SQLite and PostgreSQL.

Each writer registers the same version (exactly one may win), a version of its own, and
tries to promote the shared version to production (exactly one promotion may happen).
The rows and the change log must say exactly that, with nothing lost or doubled.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from mcp.gateway.errors import DuplicateVersionError, StageTransitionError
from mcp.gateway.registry.database import create_registry_engine
from mcp.gateway.registry.records import ArtifactMetadata
from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage

NUM_WRITERS = 6


def _artifact(writer: int) -> ArtifactMetadata:
    return ArtifactMetadata(uri=f"file:///w{writer}.gguf", format="gguf", sha256=f"{writer:064x}",
                            size_bytes=writer, name="race")


def _writer(url: str, writer: int, barrier=None) -> dict[str, str]:
    """One writer's work; returns what happened to each of its three changes."""
    outcome = {}
    with Registry.open(url, actor=f"writer-{writer}") as registry:
        if barrier is not None:
            barrier.wait()
        for key, change in (
            ("shared", lambda: registry.register(_artifact(writer), "race", "shared")),
            ("own", lambda: registry.register(_artifact(writer), "race", f"w{writer}")),
            ("promote", lambda: registry.promote("race", "shared", Stage.PRODUCTION)),
        ):
            try:
                change()
                outcome[key] = "ok"
            except (DuplicateVersionError, StageTransitionError) as exc:
                outcome[key] = type(exc).__name__
    return outcome


def _check(url: str, outcomes: list[dict[str, str]]) -> None:
    assert sorted(o["shared"] for o in outcomes) == ["DuplicateVersionError"] * (NUM_WRITERS - 1) + ["ok"]
    assert all(o["own"] == "ok" for o in outcomes)
    assert sorted(o["promote"] for o in outcomes) == ["StageTransitionError"] * (NUM_WRITERS - 1) + ["ok"]
    with Registry.open(url) as registry:
        versions = {v.version: v for v in registry.versions("race")}
        changes = registry.changes()
    assert set(versions) == {"shared", *(f"w{i}" for i in range(NUM_WRITERS))}
    assert versions["shared"].stage == Stage.PRODUCTION
    actions = [c.action for c in changes]
    assert actions.count("model.create") == 1
    assert actions.count("version.add") == NUM_WRITERS + 1
    assert [(c.subject, c.after["stage"]) for c in changes if c.action == "version.stage"] == [
        ("race:shared", "production")]
    winner = next(c.actor for c in changes if c.action == "version.add" and c.subject == "race:shared")
    assert winner == versions["shared"].created_by
    assert [c.id for c in changes] == sorted({c.id for c in changes})


def test_threads_race_on_one_model(registry_url):
    Registry.open(registry_url).close()  # migrate once; the race is about the data
    barrier = threading.Barrier(NUM_WRITERS)
    with ThreadPoolExecutor(NUM_WRITERS) as pool:
        outcomes = list(pool.map(lambda i: _writer(registry_url, i, barrier), range(NUM_WRITERS)))
    _check(registry_url, outcomes)


@pytest.mark.parametrize("migrated_first", [True, False], ids=["migrated", "racing-migrations"])
def test_processes_race_on_one_model(registry_url, migrated_first):
    if migrated_first:
        Registry.open(registry_url).close()
    context = multiprocessing.get_context("spawn")
    barrier = context.Manager().Barrier(NUM_WRITERS) if migrated_first else None
    with context.Pool(NUM_WRITERS) as pool:
        outcomes = pool.starmap(_writer, [(registry_url, i, barrier) for i in range(NUM_WRITERS)])
    _check(registry_url, outcomes)


def _open_engine(url: str) -> str:
    engine = create_registry_engine(url)
    try:
        with engine.connect() as connection:
            return connection.exec_driver_sql("PRAGMA journal_mode").scalar()
    finally:
        engine.dispose()


def test_processes_open_one_new_sqlite_file_at_once(tmp_path):
    """Opening a new file switches it to WAL, which SQLite does without its busy handler:
    processes doing it at once must wait their turn, never fail with "database is locked"."""
    urls = [f"sqlite:///{tmp_path / f'new{round_}.db'}" for round_ in range(25)]
    with multiprocessing.get_context("spawn").Pool(NUM_WRITERS) as pool:
        for url in urls:
            assert pool.map(_open_engine, [url] * NUM_WRITERS) == ["wal"] * NUM_WRITERS
