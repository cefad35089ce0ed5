"""``WorkerSupervisor``: keeps one model's worker running, restarting it when it dies.

A crash is logged (with how the process ended), the requests it held are ended by the
``on_crash`` callback, and a restart follows after a backoff that doubles with each restart
in the last minute (``serving.worker.restart_backoff_s`` up to ``restart_backoff_max_s``).
Past ``max_restarts_per_minute`` the supervisor gives up: the model stays down and every
request gets a WorkerUnavailableError saying so. Requests that arrive while a restart is on
its way wait for it (up to ``start_timeout_s``). A worker is started from a spare when one
with the right launch is idle (spares.py), the first one and every restart alike.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp.base.errors import MCPError, WorkerUnavailableError
from mcp.serving.isolation.process import WorkerProcess
from mcp.serving.isolation.spares import SpareWorkers
from mcp.serving.isolation.spec import WorkerSpec

logger = logging.getLogger("mcp.serving.isolation")
_WINDOW_S = 60.0


def restart_delay(num_recent: int, backoff_s: float, backoff_max_s: float) -> float:
    """The wait before a restart, given how many restarts the last minute saw."""
    return min(backoff_max_s, backoff_s * (2 ** num_recent))


class WorkerSupervisor:
    """Starts the worker at once (raising what its load raised) and restarts it when it dies."""

    def __init__(self, spec: WorkerSpec, on_steps: Callable[[dict[str, Any]], None],
                 on_crash: Callable[[WorkerProcess, str], None], spares: SpareWorkers | None = None) -> None:
        self.spec, self.spares = spec, spares
        self.from_spare = False  # whether the running worker was a spare
        self._on_steps, self._on_crash = on_steps, on_crash
        self._cond = threading.Condition()
        self._recent: collections.deque[float] = collections.deque()  # monotonic times of restarts
        self.num_restarts = 0
        self._stopped = False
        self._gave_up: str | None = None
        self._process: WorkerProcess | None = self._spawn()
        self.first_ready = self._process.ready

    @property
    def process(self) -> WorkerProcess | None:
        """The running worker, or None while it restarts (or after the supervisor gave up)."""
        with self._cond:
            return self._process

    @property
    def problem(self) -> str | None:
        """Why the model cannot serve now (None while its worker runs): what readiness and
        ``mcp_worker_up`` report."""
        with self._cond:
            if self._process is not None:
                return None
            if self._gave_up is not None:
                return self._gave_up
            if self._stopped:
                return f"model {self.spec.name} has been unloaded"
            return f"the worker of model {self.spec.name} is restarting after a crash"

    def running(self, wait_s: float) -> WorkerProcess:
        """The running worker, waiting up to ``wait_s`` for a restart under way."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while self._process is None and self._gave_up is None and not self._stopped:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerUnavailableError(f"the worker of model {self.spec.name} is restarting after a "
                                                 "crash and was not ready in time; retry shortly", 5.0)
                self._cond.wait(left)
            if self._stopped:
                raise WorkerUnavailableError(f"model {self.spec.name} has been unloaded; load it again", None)
            if self._gave_up is not None:
                raise WorkerUnavailableError(self._gave_up, None)
            return self._process

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            process, self._process = self._process, None
            self._cond.notify_all()
        if process is not None:
            process.stop()

    def _spawn(self) -> WorkerProcess:
        """A worker for the spec: a spare's, or (none idle, or it failed before loading) a fresh one."""
        spare = self.spares.take(self.spec.launch) if self.spares is not None else None
        if spare is not None:
            try:
                process = WorkerProcess.spawn(self.spec, self._on_steps, self._exited, spare)
                self.from_spare = True
                return process
            except WorkerUnavailableError as exc:  # a model file's own error (ModelFormatError) is raised
                logger.warning("spare worker pid %d for model %s failed (%s); starting a fresh one",
                               spare.pid, self.spec.name, exc)
        self.from_spare = False
        return WorkerProcess.spawn(self.spec, self._on_steps, self._exited)

    def _exited(self, process: WorkerProcess, reason: str) -> None:
        """The reader thread of a worker that died on its own."""
        with self._cond:
            if self._process is process:
                self._process = None
            stopped = self._stopped
        self._on_crash(process, reason)
        if stopped:
            return
        logger.error("worker of model %s (pid %d) %s; restarting it", self.spec.name, process.pid, reason)
        threading.Thread(target=self._restart, args=(reason,), name=f"mcp-worker-restart-{self.spec.name}",
                         daemon=True).start()

    def _restart(self, reason: str) -> None:
        limits = self.spec.limits
        while True:
            with self._cond:
                now = time.monotonic()
                while self._recent and now - self._recent[0] > _WINDOW_S:
                    self._recent.popleft()
                if len(self._recent) >= limits.max_restarts_per_minute:
                    self._give_up(reason)
                    return
                delay = restart_delay(len(self._recent), limits.restart_backoff_s, limits.restart_backoff_max_s)
                self._recent.append(now)
                self._cond.wait_for(lambda: self._stopped, delay)
                if self._stopped:
                    return
            try:
                process = self._spawn()
            except MCPError as exc:
                reason = f"could not be restarted ({exc})"
                logger.error("worker of model %s %s", self.spec.name, reason)
                continue
            self._installed(process)
            return

    def _installed(self, process: WorkerProcess) -> None:
        with self._cond:
            if self._stopped:
                stale = process
            else:
                stale, self._process = None, process
                self.num_restarts += 1
                self._cond.notify_all()
        if stale is not None:
            stale.stop()
            return
        logger.warning("worker of model %s restarted (pid %d, restart %d)", self.spec.name, process.pid,
                       self.num_restarts)
        if self.spares is not None:
            self.spares.refill(self.spec.launch)

    def _give_up(self, reason: str) -> None:  # called with _cond held
        self._gave_up = (f"the worker of model {self.spec.name} kept crashing ({len(self._recent)} restarts "
                         f"within a minute, the most serving.worker.max_restarts_per_minute allows; last it "
                         f"{reason}); it is not restarted again: read the server log, then load the model "
                         "again or restart the server")
        logger.error("%s", self._gave_up)
        self._cond.notify_all()
