"""Measuring helpers shared by the engine workers: repeated timings, RSS, the page cache.

Nothing here imports torch, so the llama.cpp worker's memory is llama.cpp's own.
"""

from __future__ import annotations

import ctypes
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def repeat(runs: int, measure_once: Callable[[], float], warmups: int = 1) -> list[float]:
    """``measure_once()`` after ``warmups`` unrecorded calls, ``runs`` times: its values."""
    for _ in range(warmups):
        measure_once()
    return [measure_once() for _ in range(runs)]


def summary(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def now() -> float:
    return time.perf_counter()


def wall(call: Callable[[], object]) -> float:
    """Seconds one ``call()`` takes."""
    started = now()
    call()
    return now() - started


def memory_mib() -> dict[str, float]:
    """This process's resident set now (VmRSS) and at its peak (VmHWM), MiB."""
    status = {}
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    status[key] = int(value.split()[0]) / 1024  # kB -> MiB
    except OSError:
        pass
    peak = status.get("VmHWM", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"rss": status.get("VmRSS", peak), "peak": peak}


def drop_from_page_cache(path: str) -> float | None:
    """Ask the kernel to drop ``path``'s clean pages; the fraction still resident after.

    Pages another process keeps mapped stay resident; the fraction says how cold the
    following load really is (None where mincore is not available).
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return resident_fraction(path)


def resident_fraction(path: str) -> float | None:
    """Fraction of ``path``'s pages in the page cache (mmap + mincore, which read nothing)."""
    size = os.path.getsize(path)
    if size == 0 or not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if address in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            pages = (size + PAGE_SIZE - 1) // PAGE_SIZE
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(address, size, vector) != 0:
                return None
            return sum(byte & 1 for byte in bytes(vector)) / pages
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)


def log(engine: str, message: str) -> None:
    """Progress on stderr (stdout carries nothing; results go back as a JSON file)."""
    print(f"[{engine}] {message}", file=sys.stderr, flush=True)
