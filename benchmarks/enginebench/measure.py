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


class OtherLoad:
    """How much of the machine other processes used while we measured.

    The machine's busy CPU time (/proc/stat) minus this process's and its finished
    children's (the workers'), over the cores times the wall time. Others' load is the
    main source of noise in these figures; it is reported next to them.
    """

    def __init__(self) -> None:
        self._start = self._sample()

    def share(self) -> float | None:
        """Fraction of all cores others kept busy since construction (None off Linux)."""
        end = self._sample()
        if end is None or self._start is None:
            return None
        busy, ours, wall = (e - s for e, s in zip(end, self._start))
        return max(0.0, (busy - ours) / (wall * os.cpu_count())) if wall > 0 else None

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as handle:
                fields = [int(v) for v in handle.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / ticks  # all but idle and iowait
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
        return busy, ours, now()


def wait_until_quiet(max_wait_s: float, threshold: float, window_s: float = 5.0) -> tuple[float, float | None]:
    """Wait (at most ``max_wait_s``) for a ``window_s`` in which others use under ``threshold``
    of the cores; (seconds waited, their share in the last window)."""
    started = now()
    while True:
        watch = OtherLoad()
        time.sleep(window_s)
        share = watch.share()
        waited = now() - started
        if share is None or share < threshold or waited >= max_wait_s:
            return waited, share
