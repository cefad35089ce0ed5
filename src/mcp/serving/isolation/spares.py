"""``SpareWorkers``: workers launched ahead, sandboxed and idle, so that a load (a hot swap, a
restart after a crash) skips the interpreter start-up.

A fresh worker spends most of its time to ready before it knows its model: starting Python,
importing torch and the engine, entering the sandbox (about 1.7 s against about 0.1 s of model
load). ``serving.worker.spare_workers`` of them (default 1; 0: none) are kept ready. A load takes
one whose ``WorkerLaunch`` (device, threads, sandbox limits) and environment equal what a worker
for it would get now; one that differs is discarded, never given the model. After each load
the next spare is launched in the background, with the tokenizer of the model just loaded as
a hint (worker.py: built ahead, used only if the next model's tokenizer is byte for byte the
same). A thread watches the idle spares' channels: a spare that dies idle (its channel closes)
is reaped, logged and replaced, at most ``_MAX_LOSSES_PER_MINUTE`` times a minute. ``close``
ends every spare, including one still starting, so a shutdown leaves none behind; a spare whose
server dies without closing reads the end of its channel and exits.
"""

from __future__ import annotations

import collections
import logging
import select
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Any

from mcp.base.errors import MCPError
from mcp.serving.isolation.launch import LaunchedWorker, describe_exit
from mcp.serving.isolation.spec import WorkerLaunch, worker_environment

logger = logging.getLogger("mcp.serving.isolation")
_MAX_LOSSES_PER_MINUTE = 5
_CLOSE_WAIT_S = 60.0  # close() waits this long for a spare still starting


class SpareWorkers:
    """Up to ``num_spares`` idle, sandboxed workers for the next loads. Thread-safe."""

    def __init__(self, num_spares: int) -> None:
        self.num_spares = num_spares
        self.num_replaced = 0  # spares that died idle and were replaced
        self._idle: list[LaunchedWorker] = []
        self._starting: list[threading.Thread] = []
        self._spawned: set[subprocess.Popen] = set()  # processes of spares still starting
        self._cond = threading.Condition()
        self._closed = False
        self._launch: WorkerLaunch | None = None  # what the last load asked for
        self._tokenizer: Mapping[str, Any] | None = None
        self._losses: collections.deque[float] = collections.deque()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_writer.setblocking(False)  # a full buffer already wakes the watcher
        self._watcher = threading.Thread(target=self._watch, name="mcp-spare-watch", daemon=True)

    @property
    def pids(self) -> list[int]:
        """The idle spares' process ids."""
        with self._cond:
            return [spare.pid for spare in self._idle]

    def take(self, launch: WorkerLaunch) -> LaunchedWorker | None:
        """An idle spare started with ``launch`` and today's worker environment, or None.
        Spares started otherwise are discarded: a load never gets a worker set up for another."""
        environment = worker_environment()
        with self._cond:
            matching = [s for s in self._idle if s.launch == launch and s.environment == environment
                        and s.popen.poll() is None]
            taken = matching[0] if matching else None
            stale = [s for s in self._idle if s not in matching]
            self._idle = matching[1:]
        self._wake()
        for spare in stale:
            logger.info("spare worker pid %d was started with other settings than this load's (or has "
                        "exited); discarding it", spare.pid)
            spare.discard()
        return taken

    def refill(self, launch: WorkerLaunch, tokenizer: Mapping[str, Any] | None = None) -> None:
        """Launch spares in the background for ``launch`` until ``num_spares`` are idle or starting;
        ``tokenizer`` (a TokenizerSpec as a dict) replaces the hint they get, None keeps it."""
        with self._cond:
            if self._closed:
                return
            self._launch = launch
            self._tokenizer = tokenizer if tokenizer is not None else self._tokenizer
            if not self._watcher.is_alive() and self._watcher.ident is None:
                self._watcher.start()  # with the first spare: a pool never filled has no thread
            self._starting = [t for t in self._starting if t.is_alive()]
            missing = self.num_spares - len(self._idle) - len(self._starting)
            for _ in range(max(0, missing)):
                starter = threading.Thread(target=self._start_one, args=(launch, self._tokenizer),
                                           name="mcp-spare-start", daemon=True)
                self._starting.append(starter)
                starter.start()

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until ``num_spares`` spares are idle (benchmarks and tests); False past the timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._idle) >= self.num_spares or self._closed, timeout_s) \
                and not self._closed

    def close(self) -> None:
        """End every spare, idle or starting (a start under way is killed and waited for)."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            starting, spawned = list(self._starting), list(self._spawned)
            self._cond.notify_all()
        self._wake()
        for spare in idle:
            spare.discard()
        for popen in spawned:
            if popen.poll() is None:
                popen.kill()
        for starter in starting:
            starter.join(_CLOSE_WAIT_S)  # it sees _closed and discards what it started
        if self._watcher.ident is not None:
            self._watcher.join(5.0)
        self._wake_writer.close()
        self._wake_reader.close()

    # -- threads --------------------------------------------------------------------------
    def _start_one(self, launch: WorkerLaunch, tokenizer: Mapping[str, Any] | None) -> None:
        spawned: list[subprocess.Popen] = []

        def track(popen: subprocess.Popen) -> None:
            with self._cond:
                spawned.append(popen)
                self._spawned.add(popen)
                if self._closed:
                    popen.kill()  # close() came between the spawn and this

        try:
            spare = LaunchedWorker.start(launch, "spare", tokenizer, on_spawn=track)
        except MCPError as exc:
            if not self._closed:
                logger.error("a spare worker could not be started (%s); loads start their own worker", exc)
            return
        finally:
            with self._cond:
                self._spawned.difference_update(spawned)
        with self._cond:
            keep = not self._closed and launch == self._launch
            if keep:
                self._idle.append(spare)
                self._cond.notify_all()
        if keep:
            self._wake()
            logger.info("spare worker ready (pid %d)", spare.pid)
        else:
            spare.discard()

    def _watch(self) -> None:
        """Poll the idle spares' channels: an idle spare sends nothing, so an event is its end."""
        while True:
            with self._cond:
                if self._closed:
                    return
                watched = {spare.channel.sock.fileno(): spare for spare in self._idle}
            poller = select.poll()
            poller.register(self._wake_reader, select.POLLIN)
            for fd in watched:
                poller.register(fd, select.POLLIN)
            for fd, _ in poller.poll():
                if fd == self._wake_reader.fileno():
                    self._wake_reader.recv(4096)
                elif fd in watched:
                    self._lost(watched[fd])

    def _lost(self, spare: LaunchedWorker) -> None:
        with self._cond:
            if spare not in self._idle:
                return  # taken (its worker is talking now) or closed
            self._idle.remove(spare)
            now = time.monotonic()
            while self._losses and now - self._losses[0] > 60.0:
                self._losses.popleft()
            self._losses.append(now)
            replace = len(self._losses) <= _MAX_LOSSES_PER_MINUTE and self._launch is not None
            self.num_replaced += replace
        spare.discard()
        how = describe_exit(spare.popen.returncode)
        if not replace:
            logger.error("spare worker pid %d %s while idle, %d times within a minute: not replaced; loads "
                         "start their own worker", spare.pid, how, len(self._losses))
            return
        logger.warning("spare worker pid %d %s while idle; starting another", spare.pid, how)
        self.refill(self._launch)

    def _wake(self) -> None:
        try:
            self._wake_writer.send(b"x")
        except OSError:
            pass  # closed (the watcher has stopped), or full (it will wake)
