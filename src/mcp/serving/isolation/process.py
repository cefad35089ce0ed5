"""``WorkerProcess``: one running worker, seen from the supervisor.

Made from a ``LaunchedWorker`` (launch.py: a fresh interpreter, sandboxed, waiting), taken
from the spares (spares.py) or launched for it, by sending it its model. Every frame to it goes through a queue and one writer thread, so that ``send`` never blocks
and is safe from a finalizer (a dropped stream cancels its request). ``send`` encodes the frame
on the caller's thread: a value the wire cannot carry is the caller's InvalidRequestError, and
the writer only ever writes bytes. Should the writer fail anyway, it kills the worker, so that
the supervisor restarts it (a crash, counted and logged) instead of leaving a model that
queues frames nobody writes. A reader thread answers ``call``s and hands ``steps`` frames on;
when the channel ends it reports the exit once.
"""

from __future__ import annotations

import itertools
import logging
import queue
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from mcp.base.errors import InvalidRequestError, WorkerUnavailableError
from mcp.serving.isolation import codec
from mcp.serving.isolation.launch import LaunchedWorker, describe_exit, end, expect
from mcp.serving.isolation.spec import WorkerSpec
from mcp.serving.isolation.wire import ChannelClosed, FrameChannel, UnsendableFrame, encode

logger = logging.getLogger("mcp.serving.isolation")
_STOP = object()


class WorkerProcess:
    """A started, ready worker. ``ready`` is its ready frame (pid, plan, measurements, sandbox)."""

    def __init__(self, spec: WorkerSpec, popen: subprocess.Popen, channel: FrameChannel, ready: dict[str, Any],
                 on_steps: Callable[[dict[str, Any]], None],
                 on_exit: Callable[[WorkerProcess, str], None]) -> None:
        self.spec, self.popen, self.channel, self.ready = spec, popen, channel, ready
        self._on_steps, self._on_exit = on_steps, on_exit
        self._outbox: queue.SimpleQueue[bytes | object] = queue.SimpleQueue()
        self._calls: dict[int, Future] = {}
        self._rids = itertools.count()
        self._lock = threading.Lock()
        self.alive = True
        threading.Thread(target=self._write, name=f"mcp-worker-write-{spec.name}", daemon=True).start()
        threading.Thread(target=self._read, name=f"mcp-worker-read-{spec.name}", daemon=True).start()

    @classmethod
    def spawn(cls, spec: WorkerSpec, on_steps: Callable[[dict[str, Any]], None],
              on_exit: Callable[[WorkerProcess, str], None], launched: LaunchedWorker | None = None) -> WorkerProcess:
        """Give ``launched`` (a fresh one when None) its model and wait until it has loaded it;
        raises the error it reports (a bad model file is a ModelFormatError) or
        WorkerUnavailableError."""
        if launched is None:
            launched = LaunchedWorker.start(spec.launch, spec.name)
        try:
            launched.channel.send(spec.to_wire())
            ready = expect(launched.popen, launched.channel, "ready", spec.limits.start_timeout_s, spec.name)
        except ChannelClosed:  # it died before it could be given its model
            launched.channel.close()
            end(launched.popen)
            raise WorkerUnavailableError(f"the worker for model {spec.name} {describe_exit(launched.popen.returncode)} "
                                         "before it was given the model") from None
        except BaseException:
            launched.channel.close()
            end(launched.popen)
            raise
        return cls(spec, launched.popen, launched.channel, ready, on_steps, on_exit)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def send(self, message: dict[str, Any]) -> None:
        """Queue a frame; never blocks (dropped once the worker is gone). A message the wire
        cannot carry raises InvalidRequestError here, and nothing is queued."""
        try:
            frame = encode(message)
        except UnsendableFrame as exc:
            raise InvalidRequestError(f"a {message.get('op')} message cannot be sent to the worker of model "
                                      f"{self.spec.name}: {exc}") from None
        self._outbox.put(frame)

    def call(self, op: str, timeout_s: float, **fields: Any) -> Any:
        """Send ``op`` and wait for the worker's reply; raises the error it replies with."""
        future: Future = Future()
        with self._lock:
            if not self.alive:
                raise WorkerUnavailableError(f"the worker of model {self.spec.name} has exited; retry", 1.0)
            rid = next(self._rids)
            self._calls[rid] = future
        try:
            self.send({"op": op, "rid": rid, **fields})
            return future.result(timeout_s)
        except FutureTimeout:
            raise WorkerUnavailableError(f"the worker of model {self.spec.name} did not answer {op} in "
                                         f"{timeout_s:g} s", 1.0) from None
        finally:
            with self._lock:
                self._calls.pop(rid, None)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the worker to shut down, then end it (SIGKILL past ``timeout_s``)."""
        with self._lock:
            self.alive = False
        self.send({"op": "shutdown"})
        self._outbox.put(_STOP)
        try:
            self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            end(self.popen)
        self.channel.close()

    # -- threads --------------------------------------------------------------------------
    def _write(self) -> None:
        while (frame := self._outbox.get()) is not _STOP:
            try:
                self.channel.send_frame(frame)  # type: ignore[arg-type]
            except ChannelClosed:
                return  # the reader sees the end and reports it
            except BaseException:  # noqa: BLE001 - a writer that dies would wedge the model: end the worker
                logger.exception("the writer to the worker of model %s (pid %d) failed; killing the worker so "
                                 "that it is restarted", self.spec.name, self.pid)
                self.popen.kill()
                return

    def _read(self) -> None:
        try:
            while True:
                message = self.channel.recv()
                if message["op"] == "steps":
                    self._on_steps(message)
                elif message["op"] == "reply":
                    self._answer(message)
        except ChannelClosed as closed:
            reason = self._exit_reason(closed)
        with self._lock:
            was_alive, self.alive = self.alive, False
            calls = list(self._calls.values())
        self._outbox.put(_STOP)
        for future in calls:
            future.set_exception(WorkerUnavailableError(f"the worker of model {self.spec.name} {reason}; retry", 1.0))
        if was_alive:  # not a stop() we asked for
            self._on_exit(self, reason)

    def _answer(self, message: dict[str, Any]) -> None:
        with self._lock:
            future = self._calls.get(message.get("rid"))
        if future is None or future.done():
            return  # its caller timed out
        if message.get("error") is not None:
            future.set_exception(codec.decode_error(message["error"]))
        else:
            future.set_result(message.get("result"))

    def _exit_reason(self, closed: ChannelClosed) -> str:
        try:
            code = self.popen.wait(5.0)
        except subprocess.TimeoutExpired:  # the channel broke but the process lives: end it
            end(self.popen)
            return f"broke its channel ({closed}) and was killed"
        return describe_exit(code)
