"""The checked layout of a ``.mcp`` file, read without mapping it and without torch.

The safetensors prefix (8-byte length + JSON) is parsed here, so a foreign, truncated or
inconsistent file gets a precise ``ModelFormatError`` naming the file; ``reader`` (torch
tensors) and ``mcp.engine.lean`` (numpy arrays) both map the file only after this passed.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcp.base.errors import ModelFormatError, ModelNotFoundError
from mcp.modelfile.spec import (
    FORMAT_TAG,
    ITEM_SIZES,
    METADATA_FORMAT_KEY,
    METADATA_HEADER_KEY,
    ModelHeader,
    TensorSpec,
    storage_dtype,
    stored_shape,
)
from mcp.modelfile.validate import check_model, check_tensor, check_types

MAX_HEADER_BYTES = 100_000_000  # safetensors' own limit
_GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class FileLayout:
    """A checked ``.mcp`` file: its header, and where each tensor's stored array lies."""

    path: Path
    header: ModelHeader
    offsets: dict[str, tuple[int, int]]  # name -> absolute [start, end) byte range in the file
    stored: dict[str, tuple[str, tuple[int, ...]]]  # name -> safetensors dtype and stored shape


@dataclass(frozen=True)
class _Prefix:
    """What the safetensors prefix of a file says."""

    data_start: int
    metadata: dict[str, str]
    entries: dict[str, dict[str, Any]]


def read_layout(path: str | os.PathLike) -> FileLayout:
    """Read and check the prefix of the ``.mcp`` file at ``path`` against its data section."""
    path = Path(path)
    if not path.is_file():
        raise ModelNotFoundError(
            f"{path}: no such model file; check the path, or make one with `mcp2026 compile`"
        )
    prefix = _read_prefix(path)
    header_json = _mcp_header_text(path, prefix.metadata)
    header = ModelHeader.from_json(header_json, source=str(path))
    check_types(header, str(path), "header")
    offsets = _check_data_section(path, prefix)
    _check_tensor_list(path, header, prefix.entries)
    check_model(header, str(path))  # the architecture, tokenizer, plan and tensor table (validate.py)
    stored = {name: (entry["dtype"], tuple(entry["shape"])) for name, entry in prefix.entries.items()}
    return FileLayout(path, header, offsets, stored)


def _read_prefix(path: Path) -> _Prefix:
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        if head[:4] == _GGUF_MAGIC:
            raise ModelFormatError(
                f"{path}: not a .mcp file, it is a GGUF file; convert it first with "
                f"`mcp2026 compile {path} -o model.mcp`"
            )
        if len(head) < 8:
            raise ModelFormatError(f"{path}: not a .mcp file ({size} bytes, too short for a header)")
        (header_len,) = struct.unpack("<Q", head)
        # never echo header_len: it is the file's first 8 bytes (of /etc/shadow, "root:*:2")
        if header_len > MAX_HEADER_BYTES or header_len < 2:
            raise ModelFormatError(
                f"{path}: not a .mcp file (its first 8 bytes are not a plausible safetensors header "
                "length); the file is corrupt or of another format"
            )
        if 8 + header_len > size:
            raise ModelFormatError(
                f"{path}: truncated or not a .mcp file: its safetensors header would run past the end "
                f"of the file ({size} bytes)"
            )
        raw = handle.read(header_len)
    entries = _parse_json(path, raw)
    metadata = entries.pop("__metadata__", None)
    return _Prefix(8 + header_len, metadata if isinstance(metadata, dict) else {}, entries)


def _parse_json(path: Path, raw: bytes) -> dict[str, Any]:
    # orjson: the header carries the tokenizer (~3 MB for a 49k vocabulary); the stdlib parser
    # spends ~12 ms on it, a fifth of a warm model load (a hot swap's load-to-ready).
    try:
        entries = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:  # also invalid UTF-8; its text may quote the file
        raise ModelFormatError(
            f"{path}: not a readable .mcp file: its safetensors header is not valid UTF-8 JSON (at byte "
            f"{8 + exc.pos}); the file is corrupt or of another format"
        ) from None
    if not isinstance(entries, dict):
        raise ModelFormatError(f"{path}: not a .mcp file: its safetensors header is not a JSON object")
    return entries


def _mcp_header_text(path: Path, metadata: dict[str, Any]) -> str:
    text = metadata.get(METADATA_HEADER_KEY)
    if metadata.get(METADATA_FORMAT_KEY) != FORMAT_TAG or not isinstance(text, str):
        raise ModelFormatError(
            f"{path}: not a .mcp file: a safetensors file without the .mcp metadata "
            f"({METADATA_FORMAT_KEY}={FORMAT_TAG!r}); make a .mcp from a model folder with `mcp2026 compile`"
        )
    return text


def _check_data_section(path: Path, prefix: _Prefix) -> dict[str, tuple[int, int]]:
    """Absolute byte range of each tensor; checks the ranges tile the data section exactly."""
    ranges = {name: _entry_range(path, name, entry) for name, entry in prefix.entries.items()}
    cursor = 0
    for name, (start, end) in sorted(ranges.items(), key=lambda item: item[1]):
        if start != cursor:
            raise ModelFormatError(f"{path}: tensor {name}'s data does not follow the previous tensor's")
        cursor = end
    size = path.stat().st_size
    expected = prefix.data_start + cursor
    if size < expected:
        raise ModelFormatError(f"{path}: truncated: {size} bytes, expected {expected}")
    if size > expected:
        raise ModelFormatError(f"{path}: {size - expected} unexpected bytes after the tensor data")
    return {name: (prefix.data_start + a, prefix.data_start + b) for name, (a, b) in ranges.items()}


def _entry_range(path: Path, name: str, entry: Any) -> tuple[int, int]:
    malformed = ModelFormatError(f"{path}: the safetensors entry of tensor {name} is malformed "
                                 "(it needs a known dtype, a shape of non-negative integers and two data_offsets)")
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str) or entry["dtype"] not in ITEM_SIZES:
        raise malformed
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not (_integers(shape) and _integers(offsets) and len(offsets) == 2):
        raise malformed
    start, end = offsets
    nbytes = math.prod(shape) * ITEM_SIZES[entry["dtype"]]
    if end - start != nbytes:
        raise ModelFormatError(f"{path}: tensor {name}'s byte range does not match its dtype and shape")
    return start, end


def _integers(value: Any) -> bool:
    """A JSON list of non-negative integers (not booleans, not floats)."""
    return isinstance(value, list) and all(type(v) is int and v >= 0 for v in value)


def _check_tensor_list(path: Path, header: ModelHeader, entries: dict[str, dict[str, Any]]) -> None:
    declared = {spec.name for spec in header.tensors}
    missing, extra = sorted(declared - set(entries)), sorted(set(entries) - declared)
    if missing or extra:
        raise ModelFormatError(
            f"{path}: the .mcp header and the stored tensors disagree "
            f"(in the header only: {missing[:5]}, stored only: {extra[:5]})"
        )
    for spec in header.tensors:
        _check_entry(path, spec, entries[spec.name])


def _check_entry(path: Path, spec: TensorSpec, entry: dict[str, Any]) -> None:
    check_tensor(spec, str(path))  # the shape fits the encoding: stored_shape can compute
    shape = stored_shape(spec.encoding, spec.shape)
    dtype = storage_dtype(spec.encoding)
    if entry["dtype"] != dtype or tuple(entry["shape"]) != shape:
        raise ModelFormatError(
            f"{path}: tensor {spec.name} is stored as {entry['dtype']} {list(entry['shape'])}, "
            f"but the header's {spec.encoding} {list(spec.shape)} needs {dtype} {list(shape)}"
        )
