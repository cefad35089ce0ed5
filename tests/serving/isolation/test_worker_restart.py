"""A killed worker: its in-flight request ends with a clean WorkerUnavailableError, another
model's worker goes on serving, and the supervisor starts a new worker for later requests."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import replace

import pytest

from mcp.base.errors import InvalidRequestError, WorkerUnavailableError
from mcp.config.isolation import WorkerLimits
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost
from mcp.serving.isolation.models import WorkerModels, worker_loop
from mcp.serving.isolation.supervisor import restart_delay

pytestmark = pytest.mark.slow  # each spawns real worker processes (torch import, model load)
LONG = {"temperature": 0.0, "max_tokens": 2000, "ignore_eos": True, "raw": True}


def _host(**limits) -> ModelHost:
    serving = ServingConfig(isolation="worker", worker=replace(WorkerLimits(restart_backoff_s=0.1), **limits))
    return ModelHost(Session(RuntimeConfig(device="cpu", num_threads=1, serving=serving)))


def _pid(host: ModelHost, name: str) -> int:
    with host.acquire(name) as version:
        return worker_loop(version.model).supervisor.process.pid


def test_a_killed_worker_fails_its_request_cleanly_and_is_replaced(smollm2_mcp, tiny_mcp):
    host = _host()
    try:
        host.load(ServedModel("big", str(smollm2_mcp)))
        host.load(ServedModel("tiny", str(tiny_mcp)))
        assert isinstance(host.loader, WorkerModels)
        big_pid, tiny_pid = _pid(host, "big"), _pid(host, "tiny")
        with host.acquire("big") as version:
            stream = version.model.stream("Count to a thousand:", **LONG)
            assert next(stream)  # the request is running in the worker
            others: list = []
            other = threading.Thread(target=lambda: others.append(
                host.resolve_and_hold("tiny").model.infer("Hello", temperature=0.0, max_tokens=8, raw=True)))
            os.kill(big_pid, signal.SIGKILL)
            other.start()
            with pytest.raises(WorkerUnavailableError, match=r"big:1 was killed by SIGKILL while this request "
                                                             r"ran; it is being restarted: retry the request"):
                for _ in stream:
                    pass
            other.join(60)
        assert others and others[0].usage.completion_tokens == 8  # the other model was unaffected
        assert _pid(host, "tiny") == tiny_pid
        with host.acquire("big") as version:  # a later request waits for the new worker
            result = version.model.infer("Hi", temperature=0.0, max_tokens=3, raw=True)
            loop = worker_loop(version.model)
            assert result.usage.completion_tokens == 3
            assert loop.supervisor.num_restarts == 1 and loop.supervisor.process.pid != big_pid
    finally:
        host.close()


def test_past_the_restart_rate_the_model_stays_down(tiny_mcp):
    host = _host(max_restarts_per_minute=1)
    try:
        host.load(ServedModel("tiny", str(tiny_mcp)))
        os.kill(_pid(host, "tiny"), signal.SIGKILL)
        with host.acquire("tiny") as version:
            version.model.infer("Hi", temperature=0.0, max_tokens=2, raw=True)  # served by the restart
            supervisor = worker_loop(version.model).supervisor
            os.kill(supervisor.process.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while supervisor.process is not None and time.monotonic() < deadline:
                time.sleep(0.02)
            with pytest.raises(WorkerUnavailableError, match="kept crashing .* it is not restarted again"):
                version.model.infer("Hi", temperature=0.0, max_tokens=2, raw=True)
    finally:
        host.close()


def test_cancelling_a_request_frees_its_sequence_in_the_worker(tiny_mcp):
    host = _host()
    try:
        host.load(ServedModel("tiny", str(tiny_mcp)))
        with host.acquire("tiny") as version:
            stream = version.model.stream("Hello", temperature=0.0, max_tokens=200, ignore_eos=True, raw=True)
            next(stream)
            stream.cancel()
            list(stream)
            assert stream.result.finish_reason == "cancelled"
            stats = version.model.loop.stats()
            assert stats.num_running == 0 and stats.num_free_blocks == stats.num_blocks
    finally:
        host.close()


def test_the_restart_backoff_doubles_up_to_its_ceiling():
    assert [restart_delay(n, 0.5, 3.0) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_a_value_the_wire_cannot_carry_fails_its_request_and_nothing_else(tiny_mcp):
    """Before the fix, orjson raised in the writer thread: it died and the model wedged."""
    host = _host()
    try:
        host.load(ServedModel("tiny", str(tiny_mcp)))
        with host.acquire("tiny") as version:
            with pytest.raises(InvalidRequestError, match=r"^tenant cannot be sent to the model's worker \("):
                version.model.infer("Hi", temperature=0.0, max_tokens=2, raw=True, tenant="bad \ud800")
            result = version.model.infer("Hi", temperature=0.0, max_tokens=2, raw=True)
            assert result.usage.completion_tokens == 2
            assert worker_loop(version.model).supervisor.num_restarts == 0
    finally:
        host.close()


def test_a_failing_writer_ends_the_worker_which_is_restarted(tiny_mcp):
    host = _host()
    try:
        host.load(ServedModel("tiny", str(tiny_mcp)))
        with host.acquire("tiny") as version:
            supervisor = worker_loop(version.model).supervisor
            broken = supervisor.process

            def fail(frame: bytes) -> None:  # what any bug in the writer would do
                raise RuntimeError("the writer broke")

            broken.channel.send_frame = fail
            # The worker is killed; the submit it never received is retried on its successor.
            result = version.model.infer("Hi", temperature=0.0, max_tokens=2, raw=True)
            assert result.usage.completion_tokens == 2
            assert supervisor.num_restarts == 1 and supervisor.process is not broken
            assert broken.popen.returncode == -9
    finally:
        host.close()
