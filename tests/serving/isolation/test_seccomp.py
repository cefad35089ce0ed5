"""The seccomp filter on its own, in a fresh interpreter: refused calls fail with EPERM (the
process lives to report it) and everything else still works."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest

from mcp.serving.isolation.seccomp import ARCHES, build_filter, machine_arch

SCRIPT = """
import ctypes, json, os, platform, socket
from mcp.serving.isolation import seccomp
libc = ctypes.CDLL(None, use_errno=True)
left, right = socket.socketpair()              # made before the filter: keeps working
seccomp.set_no_new_privs(libc)
seccomp.install_filter(libc, seccomp.machine_arch(), platform.machine())
def attempt(action):
    try:
        action()
    except OSError as exc:
        return exc.errno
    return 0
left.sendall(b"ping")
print(json.dumps({
    "socket": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    "unix": attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
    "exec": attempt(lambda: os.posix_spawn("/bin/true", ["true"], {})),
    "ptrace": 0 if libc.ptrace(16, os.getppid(), None, None) == 0 else ctypes.get_errno(),
    "pair": right.recv(4).decode(),
    "file": len(open("/proc/self/status").read()) > 0,
    "fork": attempt(lambda: os.waitpid(os.fork() or os._exit(0), 0)),
}))
"""


@pytest.mark.skipif(machine_arch() is None, reason="the filter is written for x86_64 and aarch64 only")
def test_refused_calls_fail_with_eperm_and_the_rest_works():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {"socket": 1, "unix": 1, "exec": 1, "ptrace": 1, "pair": "ping", "file": True, "fork": 0}


def test_the_program_refuses_foreign_architectures_and_x32():
    program = build_filter(ARCHES["x86_64"], x32_guard=True)
    instructions = [struct.unpack("HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    assert instructions[1] == (0x15, 1, 0, 0xC000003E)  # not x86_64: fall through to the refusal
    assert instructions[2] == (0x06, 0, 0, 0x00050001)  # SECCOMP_RET_ERRNO | EPERM
    assert instructions[4][3] == 0x40000000 and 4 + 1 + instructions[4][1] == len(instructions) - 1
    assert instructions[-2:] == [(0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x00050001)]
