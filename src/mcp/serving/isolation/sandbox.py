"""Drop a worker into its sandbox, in order: an empty network namespace (when privileged),
resource limits, no new privileges, the seccomp filter.

Each step that cannot be taken is logged with its reason and reported, and the worker goes on
with the others: without CAP_SYS_ADMIN there is no new network namespace, but the seccomp
filter still refuses every new socket. Called once the modules are imported and before the
model file is opened, so that parsing the file already runs inside the sandbox. The address
space limit depends on the model file's size, so it is set once the worker is given its model
(``limit_address_space``), still before the file is opened: a spare worker (spares.py) waits in
the rest of the sandbox.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import platform
import resource
from typing import Any

from mcp.config.isolation import WorkerLimits
from mcp.serving.isolation import seccomp

logger = logging.getLogger("mcp.serving.isolation")
CLONE_NEWNET = 0x40000000


def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def enter_sandbox(limits: WorkerLimits, name: str) -> dict[str, Any]:
    """Apply every restriction ``limits`` asks for but the address space; returns what was
    applied (and why not)."""
    # No PR_SET_PDEATHSIG: it fires when the spawning *thread* ends (a restart thread does at
    # once). A worker whose supervisor dies reads the end of its channel and exits.
    c = libc()
    report = {"network_namespace": _enter_network_namespace(c, limits.network_namespace),
              "rlimits": _set_rlimits(limits.max_open_files)}
    seccomp.set_no_new_privs(c)
    report["no_new_privs"] = True
    report["seccomp"] = _install_seccomp(c, limits.seccomp)
    for step in ("network_namespace", "seccomp"):
        if report[step] != "on":
            logger.warning("worker %s: %s is off: %s", name, step.replace("_", " "), report[step])
    return report


def _enter_network_namespace(c: ctypes.CDLL, wanted: bool) -> str:
    if not wanted:
        return "skipped: serving.worker.network_namespace is false"
    if c.unshare(CLONE_NEWNET) == 0:
        return "on"
    error = ctypes.get_errno()
    if error == errno.EPERM:
        return ("no privilege: a new network namespace needs CAP_SYS_ADMIN (run as root, or grant "
                "the capability); the seccomp filter still refuses new sockets")
    return f"unshare(CLONE_NEWNET) failed: {os.strerror(error)}"


def limit_address_space(report: dict[str, Any], address_space: int | None) -> None:
    """Set RLIMIT_AS (None: leave it unlimited) and record it in ``report``."""
    if address_space is not None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    report["rlimits"]["as"] = address_space


def _set_rlimits(max_open_files: int) -> dict[str, int | None]:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = max_open_files if hard == resource.RLIM_INFINITY else min(max_open_files, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    return {"core": 0, "nofile": files, "as": None}


def _install_seccomp(c: ctypes.CDLL, wanted: bool) -> str:
    if not wanted:
        return "skipped: serving.worker.seccomp is false"
    machine = platform.machine()
    arch = seccomp.machine_arch(machine)
    if arch is None:
        return f"no filter for this architecture ({machine}); x86_64 and aarch64 have one"
    try:
        seccomp.install_filter(c, arch, machine)
    except OSError as exc:
        return f"the kernel refused the filter: {exc.strerror}"
    return "on"
