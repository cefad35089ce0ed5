"""A seccomp filter, as classic BPF built with ``struct``, that refuses what a worker never needs.

Refused with EPERM (never a kill, so the caller sees an error it can report): ``execve`` and
``execveat`` (no new programs), ``socket`` (no new sockets of any family: the channel to the
supervisor was made before the filter), ``ptrace``, ``process_vm_readv`` / ``process_vm_writev``
(no reading or writing another process's memory). On x86_64 the x32 system call numbers are
refused too, and a call from a foreign architecture is refused whole. Everything else runs.

Installed with ``seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC)`` so that every
thread of the process gets it (torch starts threads at import), after ``PR_SET_NO_NEW_PRIVS``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass

PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1

_BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_BPF_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO | EPERM
_OFFSET_NR, _OFFSET_ARCH = 0, 4  # struct seccomp_data: int nr; __u32 arch; ...
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class Arch:
    audit_arch: int
    seccomp_nr: int  # the seccomp(2) system call itself
    refused: dict[str, int]  # name -> system call number


ARCHES = {
    "x86_64": Arch(0xC000003E, 317, {"execve": 59, "execveat": 322, "socket": 41, "ptrace": 101,
                                     "process_vm_readv": 310, "process_vm_writev": 311}),
    "aarch64": Arch(0xC00000B7, 277, {"execve": 221, "execveat": 281, "socket": 198, "ptrace": 117,
                                      "process_vm_readv": 270, "process_vm_writev": 271}),
}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def machine_arch(machine: str | None = None) -> Arch | None:
    """This machine's entry in ``ARCHES``, or None where the filter is not written for it."""
    return ARCHES.get(machine or platform.machine())


def build_filter(arch: Arch, x32_guard: bool) -> bytes:
    """The program: struct sock_filter {u16 code; u8 jt, jf; u32 k} per instruction."""
    numbers = sorted(arch.refused.values())
    program = [(_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH),
               (_BPF_JEQ_K, 1, 0, arch.audit_arch),  # our architecture: go on; else refuse
               (_BPF_RET_K, 0, 0, _RET_EPERM),
               (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR)]
    if x32_guard:  # an x32 number: over the checks and the allow, onto the refusal
        program.append((_BPF_JGE_K, len(numbers) + 1, 0, _X32_SYSCALL_BIT))
    for index, number in enumerate(numbers):
        program.append((_BPF_JEQ_K, len(numbers) - index, 0, number))  # onto the refusal
    program += [(_BPF_RET_K, 0, 0, _RET_ALLOW), (_BPF_RET_K, 0, 0, _RET_EPERM)]
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


def set_no_new_privs(libc: ctypes.CDLL) -> None:
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(error)}")


def install_filter(libc: ctypes.CDLL, arch: Arch, machine: str) -> None:
    """Install the filter on every thread of this process; raises OSError if the kernel refuses."""
    program = build_filter(arch, x32_guard=machine == "x86_64")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    result = libc.syscall(ctypes.c_long(arch.seccomp_nr), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                          ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) failed: {os.strerror(error)}")
