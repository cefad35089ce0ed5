"""``LaunchedWorker``: a worker interpreter started and sandboxed, not yet given a model.

Started as a fresh interpreter (``subprocess`` with an allowlisted environment and only its
end of a socketpair passed: never a fork of the server after its threads and torch started).
It is sent its ``WorkerLaunch`` (a ``prepare`` frame) and answers ``idle`` once it has imported
torch and the engine, set its threads and entered its sandbox; that start-up is most of a
fresh worker's time to ready. ``WorkerProcess.spawn`` then gives it its model; a spare
(spares.py) is one launched ahead and kept idle until a load takes it.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.base.errors import WorkerUnavailableError
from mcp.serving.isolation import codec
from mcp.serving.isolation.spec import WorkerLaunch, worker_environment
from mcp.serving.isolation.wire import ChannelClosed, FrameChannel


@dataclass(eq=False)
class LaunchedWorker:
    """A started, sandboxed worker waiting for its ``start`` frame. ``idle`` is its idle frame."""

    launch: WorkerLaunch
    environment: dict[str, str]  # what it was started with (a spare whose differs from now is not used)
    popen: subprocess.Popen
    channel: FrameChannel
    idle: dict[str, Any]

    @classmethod
    def start(cls, launch: WorkerLaunch, name: str, tokenizer: Mapping[str, Any] | None = None,
              on_spawn: Callable[[subprocess.Popen], object] = lambda popen: None) -> LaunchedWorker:
        """Start a worker and wait until it is sandboxed; raises WorkerUnavailableError (or the
        error it reports). ``name`` shows in ``ps``; ``tokenizer`` is a hint (spec.py);
        ``on_spawn`` gets the process as soon as it exists (so that a closing pool can end it)."""
        environment = worker_environment()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            popen = subprocess.Popen([sys.executable, "-m", "mcp.serving.isolation.worker", str(theirs.fileno()),
                                      name], pass_fds=(theirs.fileno(),), env=environment, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        on_spawn(popen)
        channel = FrameChannel(ours)
        try:
            channel.send(launch.to_wire(tokenizer))
            idle = expect(popen, channel, "idle", launch.limits.start_timeout_s, name)
        except ChannelClosed:
            channel.close()
            end(popen)
            raise WorkerUnavailableError(f"the worker of model {name} {describe_exit(popen.returncode)} before it "
                                         "was idle") from None
        except BaseException:
            channel.close()
            end(popen)
            raise
        return cls(launch, environment, popen, channel, idle)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def discard(self, timeout_s: float = 5.0) -> None:
        """Tell it to exit (a spare no longer needed), then end it (SIGKILL past ``timeout_s``)."""
        try:
            self.channel.send({"op": "shutdown"})
        except ChannelClosed:
            pass  # it has exited already
        self.channel.close()
        try:
            self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            end(self.popen)


def expect(popen: subprocess.Popen, channel: FrameChannel, op: str, timeout_s: float, name: str) -> dict[str, Any]:
    """The worker's next frame, which must be ``op``; its ``failed`` frame raises the error it
    carries, a silence past ``timeout_s`` or an exit raises WorkerUnavailableError."""
    channel.sock.settimeout(timeout_s)
    try:
        first = channel.recv()
    except ChannelClosed:
        if popen.poll() is None:
            raise WorkerUnavailableError(f"the worker of model {name} was not {op} in {timeout_s:g} s "
                                         "(serving.worker.start_timeout_s)") from None
        raise WorkerUnavailableError(f"the worker of model {name} {describe_exit(popen.wait())} before it "
                                     f"was {op}; the server log has its output") from None
    channel.sock.settimeout(None)
    if first["op"] == "failed":
        raise codec.decode_error(first.get("error") or {})
    if first["op"] != op:
        raise WorkerUnavailableError(f"the worker of model {name} sent {first['op']!r} instead of {op}")
    return first


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def end(popen: subprocess.Popen) -> None:
    if popen.poll() is None:
        popen.kill()
    popen.wait()
