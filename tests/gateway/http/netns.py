"""Hosts of their own on this machine: Linux network namespaces joined by veth pairs to a bridge.

    root namespace  mcpnt-root 10.77.0.1 ──┐
    mcpnt-gw   eth0 10.77.0.10 ────────────┤
    mcpnt-h1   eth0 10.77.0.11, .111 ──────┤  br0 in mcpnt-sw (a switch namespace of its own, so
    mcpnt-h2   eth0 10.77.0.12, .112 ──────┤  that the host's firewall never sees the bridged
    mcpnt-h3   eth0 10.77.0.13, .113 ──────┘  traffic)

Each host's port on the switch is named after it: ``cut(name)`` sets that port down, as a pulled
cable, and ``restore(name)`` sets it up again. A process runs on a host under ``ip netns exec``
(``command(name)``). Every name starts with ``mcpnt-``: ``remove_leftovers`` kills the processes
of a killed run's namespaces and deletes them and its links. One run at a time holds a lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

PREFIX = "mcpnt-"
SWITCH = PREFIX + "sw"
ROOT_LINK = PREFIX + "root"
SUBNET = "10.77.0"
ROOT_ADDRESS = f"{SUBNET}.1"
LOCK_PATH = Path("/run/lock/mcp2026-netns.lock")
# how the kernel says no: not privileged (EPERM, EACCES), or built without namespaces (EINVAL, EOPNOTSUPP)
REFUSALS = ("Operation not permitted", "Permission denied", "Invalid argument", "not supported")
NEEDS = ("the multi-host test makes network namespaces: it needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) "
         "and iproute2's ip command")


class NetworkError(RuntimeError):
    pass


def ip_command() -> str:
    """The ip command's path (in /usr/sbin, which a user's PATH may lack)."""
    found = shutil.which("ip") or next((p for p in ("/usr/sbin/ip", "/sbin/ip") if os.access(p, os.X_OK)), None)
    if found is None:
        raise NetworkError("the ip command is missing; install Debian's iproute2 (`bash .ci/iproute2`)")
    return found


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``ip ARGS``, bounded in time; a failure raises NetworkError with ip's own message."""
    done = subprocess.run([ip_command(), *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def unavailable() -> str | None:
    """Why namespaces cannot be made here (a skip reason), or None. Only the kernel's refusal is a
    reason: a missing ``ip`` command is an error to fix (``.ci/iproute2`` installs it)."""
    probe = PREFIX + "probe"
    ip("netns", "del", probe, check=False)
    done = ip("netns", "add", probe, check=False)
    if done.returncode == 0:
        ip("netns", "del", probe)
        return None
    if any(refusal in done.stderr for refusal in REFUSALS):
        return f"`ip netns add` is refused here ({done.stderr.strip()}); {NEEDS}"
    raise NetworkError(f"ip netns add {probe} failed: {done.stderr.strip()}")


class Network:
    """The switch, the root namespace's port on it, and one namespace per host (``hosts``: name ->
    last octet of its address). Use as a context manager: everything goes on exit."""

    def __init__(self, hosts: dict[str, int]) -> None:
        self.hosts = hosts
        self._lock = None

    def address(self, name: str, second: bool = False) -> str:
        """The host's address; ``second``: the other address on the same link (last octet + 100)."""
        return f"{SUBNET}.{self.hosts[name] + (100 if second else 0)}"

    def command(self, name: str) -> list[str]:
        return [ip_command(), "netns", "exec", PREFIX + name]

    def __enter__(self) -> Network:
        self._lock = _take_lock(timeout_s=120)
        remove_leftovers()
        try:
            self._build()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _build(self) -> None:
        ip("netns", "add", SWITCH)
        ip("-n", SWITCH, "link", "add", "br0", "type", "bridge")
        ip("-n", SWITCH, "link", "set", "br0", "up")
        ip("link", "add", ROOT_LINK, "type", "veth", "peer", "name", PREFIX + "root-p")
        self._plug(PREFIX + "root-p", "root")
        ip("addr", "add", f"{ROOT_ADDRESS}/24", "dev", ROOT_LINK)
        ip("link", "set", ROOT_LINK, "up")
        for name in self.hosts:
            self._add_host(name)

    def _add_host(self, name: str) -> None:
        namespace, outside = PREFIX + name, PREFIX + name + "-p"
        ip("netns", "add", namespace)
        ip("link", "add", outside, "type", "veth", "peer", "name", PREFIX + name + "-e")
        ip("link", "set", PREFIX + name + "-e", "netns", namespace, "name", "eth0")
        self._plug(outside, name)
        for second in (False, True):
            ip("-n", namespace, "addr", "add", f"{self.address(name, second)}/24", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        ip("-n", namespace, "link", "set", "lo", "up")

    def _plug(self, link: str, port: str) -> None:
        """Move ``link`` into the switch as port ``port`` of its bridge."""
        ip("link", "set", link, "netns", SWITCH, "name", port)
        ip("-n", SWITCH, "link", "set", port, "master", "br0")
        ip("-n", SWITCH, "link", "set", port, "up")

    def cut(self, name: str) -> None:
        ip("-n", SWITCH, "link", "set", name, "down")

    def restore(self, name: str) -> None:
        ip("-n", SWITCH, "link", "set", name, "up")

    def __exit__(self, *exc_info: object) -> None:
        try:
            remove_leftovers()
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None


def remove_leftovers() -> None:
    """Kill what runs in ``mcpnt-*`` namespaces, delete them and the root namespace's ``mcpnt-*`` links."""
    namespaces = [line.split()[0] for line in ip("netns", "list").stdout.splitlines()
                  if line.startswith(PREFIX)]
    for namespace in namespaces:
        _kill_all(namespace)
        ip("netns", "del", namespace, check=False)
    for line in ip("-o", "link", "show").stdout.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith(PREFIX):
            ip("link", "del", link, check=False)


def _kill_all(namespace: str, timeout_s: float = 10.0) -> None:
    """SIGTERM to every process in the namespace, SIGKILL to those still there after ``timeout_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _pids(namespace)
        for pid in pids:
            _signal(pid, sig)
        deadline = time.monotonic() + timeout_s
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = _pids(namespace)
        if not pids:
            return
    raise NetworkError(f"processes {pids} in {namespace} outlived SIGKILL")


def _pids(namespace: str) -> list[int]:
    return [int(pid) for pid in ip("netns", "pids", namespace, check=False).stdout.split()]


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _take_lock(timeout_s: float):
    """One run at a time: a second one would delete the first one's namespaces as leftovers."""
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    handle = LOCK_PATH.open("a+")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.close()
                raise NetworkError(f"another multi-host run holds {LOCK_PATH} after {timeout_s:.0f} s") from None
            time.sleep(0.5)
