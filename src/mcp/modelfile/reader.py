"""Open a ``.mcp`` file: check it, then hand out its tensors zero-copy from a memory map.

Opening never executes code from the file. ``layout.read_layout`` checks the safetensors
prefix against the data section first, so a foreign, truncated or inconsistent file gets a
precise ``ModelFormatError`` naming the file; only then is the file mapped, once and privately (copy on write: writing to
a tensor never changes the file), and every tensor is a view of that one mapping. Tensors
that lie back to back in the file are therefore back to back in memory too, which lets the
loader join a layer's q/k/v or gate/up matrices without copying them (``join_rows``).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from pathlib import Path

import torch

from mcp.base.errors import ModelFormatError
from mcp.modelfile.layout import read_layout
from mcp.modelfile.spec import ModelHeader
from mcp.modelfile.writer import TORCH_DTYPES


def open_model(path: str | os.PathLike, verify: bool = False) -> ModelFile:
    """Open and check a ``.mcp`` file; with ``verify`` also check every tensor's sha256."""
    layout = read_layout(path)
    stored = {name: (TORCH_DTYPES[dtype], shape) for name, (dtype, shape) in layout.stored.items()}
    model = ModelFile(layout.path, layout.header, layout.offsets, stored)
    if verify:
        try:
            model.verify()
        except BaseException:
            model.close()
            raise
    return model


class ModelFile:
    """An open ``.mcp`` file. Use as a context manager, or call ``close()``."""

    def __init__(self, path: Path, header: ModelHeader, offsets: dict[str, tuple[int, int]],
                 stored: dict[str, tuple[torch.dtype, tuple[int, ...]]]) -> None:
        self.path = path
        self.header = header
        self._offsets = offsets  # name -> absolute [start, end) byte range in the file
        self._stored = stored  # name -> the stored array's dtype and shape
        try:
            self._mapping: torch.UntypedStorage | None = torch.UntypedStorage.from_file(
                str(path), shared=False, nbytes=path.stat().st_size)
        except (OSError, RuntimeError) as exc:
            raise ModelFormatError(f"{path}: cannot map the file into memory ({exc})") from None

    def __enter__(self) -> ModelFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __contains__(self, name: str) -> bool:
        return name in self._offsets

    def close(self) -> None:
        """Release the file. Tensors handed out before stay valid (they hold the mapping)."""
        self._mapping = None

    def tensor(self, name: str) -> torch.Tensor:
        """The stored representation of ``name`` (see ``spec.stored_shape``), memory-mapped.

        Dense encodings come back as that dtype in the logical shape; block encodings as
        uint8 ``[rows, row_bytes]``. Writing to the tensor never changes the file.
        """
        if name not in self._offsets:
            raise KeyError(f"{self.path} has no tensor named {name!r}")
        if self._mapping is None:
            raise ValueError(f"{self.path} is closed")
        dtype, shape = self._stored[name]
        start, end = self._offsets[name]
        if start % dtype.itemsize == 0:  # always, in files this writer made (wider items first, aligned)
            return torch.empty(0, dtype=dtype).set_(self._mapping, start // dtype.itemsize, shape)
        raw = torch.empty(0, dtype=torch.uint8).set_(self._mapping, start, (end - start,))
        return raw.clone().view(dtype).reshape(shape)  # another writer's unaligned tensor: a copy

    def verify(self) -> None:
        """Recompute every tensor's sha256; a mismatch is a ``ModelFormatError`` naming it."""
        expected = {spec.name: spec.sha256 for spec in self.header.tensors}
        actual = self._tensor_hashes()
        bad = [spec.name for spec in self.header.tensors if actual[spec.name] != expected[spec.name]]
        if bad:
            raise ModelFormatError(
                f"{self.path}: tensor {bad[0]} is corrupt (its sha256 does not match the header"
                + (f"; {len(bad) - 1} more tensors too" if len(bad) > 1 else "")
                + "); the file was damaged after it was written: copy it again or recompile it"
            )

    def _tensor_hashes(self) -> dict[str, str]:
        with open(self.path, "rb") as handle:
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                view = memoryview(mapped)
                try:
                    return {
                        name: hashlib.sha256(view[start:end]).hexdigest()
                        for name, (start, end) in self._offsets.items()
                    }
                finally:
                    view.release()
