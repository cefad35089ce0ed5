"""The one file hash used for sources, downloads and lineage."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path


def file_sha256(path: Path, on_read: Callable[[int], None] = lambda num_bytes: None) -> str:
    """The file's sha256; ``on_read`` hears of each block's size as it is hashed (progress)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            on_read(len(block))
    return digest.hexdigest()
