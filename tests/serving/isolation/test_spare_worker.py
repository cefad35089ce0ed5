"""Spare workers (serving/isolation/spares.py), with real processes and a real model: a load takes
the idle spare and a new one starts, the spare is sandboxed before it is given a model, a spare
with other settings is discarded, a killed spare is replaced, and nothing is left after close."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from mcp.config.isolation import WorkerLimits
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost
from mcp.serving.isolation.models import WorkerModels, worker_loop, worker_report

pytestmark = pytest.mark.slow  # each spawns real worker processes (torch import, model load)
GREEDY = {"temperature": 0.0, "max_tokens": 4, "raw": True}
START_S = 120.0  # a spare's start-up on a busy shared host


def _models(**limits) -> WorkerModels:
    serving = ServingConfig(isolation="worker", worker=replace(WorkerLimits(), **limits))
    return WorkerModels(Session(RuntimeConfig(device="cpu", num_threads=1, serving=serving)))


def _load(models: WorkerModels, source: Path, key: str):
    """A load as ModelHost makes it: the next spare is launched once the model is ready."""
    model = models.load(ServedModel("tiny", str(source)), key)
    models.after_ready(key)
    return model


def _children() -> set[int]:
    """This process's live child processes (zombies included: a child not yet reaped)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(entry))
    return found


def _proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def _wait_for(condition, timeout_s: float = START_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def models():
    loader = _models()
    yield loader
    loader.close()


def test_a_load_takes_the_idle_spare_and_the_next_one_starts(models, tiny_mcp):
    first = _load(models, tiny_mcp, "tiny:1")
    assert worker_loop(first).supervisor.from_spare is False  # no spare before the first load
    assert models.spares.wait_ready(START_S)
    (spare_pid,) = models.spares.pids
    second = _load(models, tiny_mcp, "tiny:2")
    supervisor = worker_loop(second).supervisor
    assert supervisor.from_spare is True and supervisor.process.pid == spare_pid
    assert spare_pid not in models.spares.pids  # consumed
    assert models.spares.wait_ready(START_S)
    (next_pid,) = models.spares.pids
    assert next_pid not in (spare_pid, worker_loop(first).supervisor.process.pid)
    # the same header: the second worker sent only its digest, and the model is the same model
    assert worker_report(second)["header_sha256"] == worker_report(first)["header_sha256"]
    assert second.infer("Hello there", **GREEDY).token_ids == first.infer("Hello there", **GREEDY).token_ids


def test_an_idle_spare_is_sandboxed_and_has_no_model_open(models, tiny_mcp):
    _load(models, tiny_mcp, "tiny:1")
    assert models.spares.wait_ready(START_S)
    (spare_pid,) = models.spares.pids
    status = _proc_status(spare_pid)  # read from outside, before it is given a model
    assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1"
    assert os.readlink(f"/proc/{spare_pid}/ns/net") != os.readlink("/proc/self/ns/net")
    open_files = {os.readlink(f"/proc/{spare_pid}/fd/{fd}") for fd in os.listdir(f"/proc/{spare_pid}/fd")}
    assert str(tiny_mcp.resolve()) not in open_files
    assert "model" not in " ".join(Path(f"/proc/{spare_pid}/cmdline").read_text().split("\0"))


def test_a_killed_spare_is_replaced(models, tiny_mcp):
    _load(models, tiny_mcp, "tiny:1")
    assert models.spares.wait_ready(START_S)
    (killed,) = models.spares.pids
    os.kill(killed, signal.SIGKILL)
    _wait_for(lambda: models.spares.pids and models.spares.pids[0] != killed)
    assert models.spares.num_replaced == 1 and killed not in _children()  # reaped
    loaded = _load(models, tiny_mcp, "tiny:2")
    assert worker_loop(loaded).supervisor.from_spare is True
    assert loaded.infer("Hi", **GREEDY).usage.completion_tokens == 4


def test_a_spare_started_with_another_environment_is_discarded(models, tiny_mcp, monkeypatch):
    _load(models, tiny_mcp, "tiny:1")
    assert models.spares.wait_ready(START_S)
    (stale,) = models.spares.pids
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a worker started now would get it: the spare lacks it
    loaded = _load(models, tiny_mcp, "tiny:2")
    assert worker_loop(loaded).supervisor.from_spare is False
    assert worker_loop(loaded).supervisor.process.pid != stale and stale not in _children()
    assert "OMP_NUM_THREADS" in worker_loop(loaded).probe()["environment"]


def test_a_spare_for_other_settings_is_not_taken(models, tiny_mcp):
    _load(models, tiny_mcp, "tiny:1")
    assert models.spares.wait_ready(START_S)
    (spare,) = models.spares.pids
    launch = worker_loop(models._models["tiny:1"]).supervisor.spec.launch
    assert models.spares.take(replace(launch, num_threads=2)) is None
    assert models.spares.take(replace(launch, limits=replace(launch.limits, seccomp=False))) is None
    assert spare not in _children() and models.spares.pids == []


def test_no_worker_is_left_after_the_host_closes(tiny_mcp):
    before = _children()
    serving = ServingConfig(isolation="worker", worker=WorkerLimits())
    host = ModelHost(Session(RuntimeConfig(device="cpu", num_threads=1, serving=serving)))
    host.load(ServedModel("tiny", str(tiny_mcp), "1"))
    assert host.loader.spares.wait_ready(START_S)
    host.load(ServedModel("tiny", str(tiny_mcp), "2"))  # takes the spare; the next one is starting now
    assert len(_children() - before) >= 2
    host.close()
    assert _children() - before == set()


def test_no_spare_without_spare_workers(tiny_mcp):
    models = _models(spare_workers=0)
    try:
        _load(models, tiny_mcp, "tiny:1")
        second = _load(models, tiny_mcp, "tiny:2")
        assert models.spares is None and worker_loop(second).supervisor.from_spare is False
        assert len(_children()) >= 2
    finally:
        models.close()


def test_a_restart_after_a_crash_takes_the_spare(tiny_mcp):
    serving = ServingConfig(isolation="worker", worker=WorkerLimits(restart_backoff_s=0.0))
    host = ModelHost(Session(RuntimeConfig(device="cpu", num_threads=1, serving=serving)))
    try:
        host.load(ServedModel("tiny", str(tiny_mcp), "1"))
        assert host.loader.spares.wait_ready(START_S)
        (spare_pid,) = host.loader.spares.pids
        with host.acquire("tiny") as version:
            supervisor = worker_loop(version.model).supervisor
            os.kill(supervisor.process.pid, signal.SIGKILL)
            result = version.model.infer("Hi", **GREEDY)  # waits for the restart
            assert result.usage.completion_tokens == 4
            assert supervisor.num_restarts == 1 and supervisor.process.pid == spare_pid
        assert host.loader.spares.wait_ready(START_S)  # and the restart launched the next spare
        assert host.loader.spares.pids != [spare_pid]
    finally:
        host.close()
