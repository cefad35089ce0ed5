"""What a worker's sandbox holds, measured from inside the worker by trying what it forbids.

``measure_isolation`` attempts a TCP connect, a new socket, a netlink socket, an exec and a
ptrace, and reads the rest from ``/proc/self``: resource limits, no_new_privs and seccomp mode,
the network namespace's interfaces and routes, every descriptor and mapping of the model file
(the weights are mapped private, copy-on-write: ``r--p``/``rw-p``, never written back), a
shared writable mapping of the model's descriptor (refused, EACCES, as it is read-only), and
the names of the environment's variables. Each attempt reports ``"allowed"`` or the errno
name it failed with. ``mcp2026 sandbox check`` prints it; operators use it to confirm a
deployment's sandbox.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import resource
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Any

from mcp.serving.isolation.sandbox import libc

PTRACE_ATTACH = 16
_ACCESS_MODES = {os.O_RDONLY: "O_RDONLY", os.O_WRONLY: "O_WRONLY", os.O_RDWR: "O_RDWR"}


def measure_isolation(model_path: str, model_fd: int, connect_to: tuple[str, int]) -> dict[str, Any]:
    """The isolation state of this process, as plain data (see the module docstring)."""
    status = _proc_status()
    return {
        "pid": os.getpid(),
        "connect": _attempt(lambda: socket.create_connection(connect_to, timeout=2.0).close()),
        "new_socket": _attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()),
        "netlink_socket": _attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close()),
        "exec": _attempt_exec(),
        "ptrace": _attempt_ptrace(),
        "rlimits": {name: _limit(getattr(resource, f"RLIMIT_{name.upper()}")) for name in ("as", "nofile", "core")},
        "no_new_privs": status.get("NoNewPrivs") == "1",
        "seccomp_mode": int(status.get("Seccomp", "0")),  # 2: a filter
        "network_namespace": os.readlink("/proc/self/ns/net"),
        "interfaces": _interfaces(),
        "ipv4_routes": _num_routes(),
        "model_fds": _model_fds(model_path),
        "model_mappings": _model_mappings(model_path),
        "model_shared_write_map": _attempt(lambda: mmap.mmap(model_fd, 0, mmap.MAP_SHARED, mmap.PROT_WRITE).close()),
        "environment": sorted(os.environ),
    }


def _attempt(action) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc)) if exc.errno else type(exc).__name__
    return "allowed"


def _attempt_exec() -> str:
    """posix_spawn of ``true``: the exec fails in the child and comes back here as an errno."""
    program = shutil.which("true") or "/bin/true"
    try:
        pid = os.posix_spawn(program, [program], {})
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc))
    os.waitpid(pid, 0)
    return "allowed"


def _attempt_ptrace() -> str:
    """PTRACE_ATTACH to a child of our own (forked: fork is allowed, and the child only sleeps)."""
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    try:
        c = libc()
        result = c.ptrace(ctypes.c_long(PTRACE_ATTACH), ctypes.c_long(child), None, None)
        return "allowed" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "failed")
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def _limit(which: int) -> int | None:
    soft, _ = resource.getrlimit(which)
    return None if soft == resource.RLIM_INFINITY else soft


def _proc_status() -> dict[str, str]:
    lines = Path("/proc/self/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def _interfaces() -> list[str]:
    """The network namespace's interfaces (/proc/self/net follows this process's namespace)."""
    lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    return sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)


def _num_routes() -> int:
    return max(0, len(Path("/proc/self/net/route").read_text().splitlines()) - 1)


def _model_fds(model_path: str) -> list[dict[str, Any]]:
    """Every descriptor open on the model file, with its access mode (from fdinfo's flags)."""
    target = os.path.realpath(model_path)
    found = []
    for entry in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            if os.readlink(f"/proc/self/fd/{entry}") != target:
                continue
            flags = _fdinfo_flags(int(entry))
        except OSError:
            continue  # closed between the listing and the read
        found.append({"fd": int(entry), "mode": _ACCESS_MODES.get(flags & os.O_ACCMODE, "?")})
    return found


def _fdinfo_flags(fd: int) -> int:
    for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8)
    raise OSError(errno.ENOENT, "no flags line")


def _model_mappings(model_path: str) -> list[str]:
    """The permissions (e.g. ``r--s``) of every mapping of the model file."""
    target = os.path.realpath(model_path)
    perms = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5] == target:
            perms.append(parts[1])
    return sorted(set(perms))
