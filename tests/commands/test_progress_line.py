"""The terminal line that draws pull and compile progress, on a real pseudo-terminal: one line per
phase, cut to the terminal's width, ended by a failure, and nothing at all on a pipe or with --quiet."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import termios

from mcp.base.errors import DownloadError
from mcp.commands.progress_line import terminal_progress
from mcp.compiler.progress import ProgressEvent


def _drawn(columns: int, quiet: bool, draw) -> str:
    """What a terminal ``columns`` wide shows after ``draw(progress)`` inside ``terminal_progress``
    (a ``DownloadError`` that ``draw`` raises ends it as a failed pull ends)."""
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    with open(terminal, "w") as stream:
        try:
            with terminal_progress(stream, quiet, summary="pulled tiny") as progress:
                draw(progress)
        except DownloadError:
            pass
    chunks = []
    try:
        while select.select([controller], [], [], 0.5)[0]:
            chunks.append(os.read(controller, 1 << 16))
    except OSError:  # EIO: drained, the terminal side is closed
        pass
    os.close(controller)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _screen(shown: str) -> list[str]:
    return [line.rsplit("\r", 1)[-1] for line in shown.replace("\x1b[K", "").rstrip("\n").split("\n")]


def _compile(progress) -> None:
    progress(ProgressEvent("compile", "reading tiny.gguf", 0))
    for n, name in enumerate(("model.embed_tokens.weight", "model.norm.weight")):
        progress(ProgressEvent("compile", name, 100 * n, 200, n, 2))
    progress(ProgressEvent("compile", "tiny.mcp", 200, 200, 2, 2, finished=True))


def test_each_phase_ends_on_its_own_line_then_the_summary():
    def draw(progress):
        progress(ProgressEvent("verify", "tiny.gguf", 5_000_000, 10_000_000))
        progress(ProgressEvent("verify", "tiny.gguf", 10_000_000, 10_000_000, finished=True))
        _compile(progress)

    shown = _drawn(120, False, draw)
    assert "\rchecking sha256  5.0/10.0 MB  tiny.gguf\x1b[K" in shown
    assert "\rcompiling  reading tiny.gguf\x1b[K" in shown
    final = _screen(shown)
    assert final[0].startswith("sha256 checked tiny.gguf: 10.0 MB in ") and final[0].endswith(" s")
    assert final[1].startswith("compiled tiny.mcp: 2/2 tensors, 0.0 MB in ")
    assert final[2].startswith("pulled tiny in ") and len(final) == 3


def test_a_line_never_wraps_a_narrow_terminal():
    shown = _drawn(30, False, _compile)
    assert all(len(line) <= 29 for line in shown.replace("\x1b[K", "").replace("\n", "\r").split("\r"))
    assert _screen(shown)[0] == "compiled tiny.mcp: 2/2 tensor"


def test_a_failure_ends_the_open_line_and_prints_no_summary():
    def draw(progress):
        progress(ProgressEvent("download", "tiny==1.0", 1_000_000, 4_000_000))
        raise DownloadError("the network went away")

    shown = _drawn(120, False, draw)
    assert shown.endswith("\rdownloading  1.0/4.0 MB  tiny==1.0\x1b[K\n")  # what follows starts on a new line
    assert "pulled" not in shown


def test_quiet_draws_nothing():
    assert _drawn(120, True, _compile) == ""


def test_a_pipe_gets_nothing():
    read_end, write_end = os.pipe()
    with open(write_end, "w") as stream, terminal_progress(stream, False, summary="pulled tiny") as progress:
        _compile(progress)
    with open(read_end) as pipe:
        assert pipe.read() == ""
