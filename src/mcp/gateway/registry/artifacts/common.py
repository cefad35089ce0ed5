"""Small helpers the importers share."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def tree_size(folder: Path) -> int:
    """Bytes of the files under ``folder``, hidden ones left out (as ``folder_sha256`` does)."""
    return sum(
        p.stat().st_size for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def dominant(elements_by_type: Counter[str], ignore: tuple[str, ...] = ()) -> str | None:
    """The type holding the most elements, ``ignore``d types (norms kept in f32) left out
    unless nothing else is there."""
    kept = Counter({k: v for k, v in elements_by_type.items() if k not in ignore}) or elements_by_type
    return kept.most_common(1)[0][0] if kept else None


def product(shape) -> int:
    count = 1
    for dim in shape:
        count *= int(dim)
    return count
