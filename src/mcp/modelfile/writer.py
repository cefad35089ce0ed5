"""Write a ``.mcp`` file: a safetensors file whose metadata carries the ``ModelHeader``.

The writer streams: each tensor is fetched from the mapping once, hashed and written, so a
lazy mapping (the compiler's) never holds more than one converted tensor in memory. The
header comes first in the file but holds every tensor's sha256; it is written first with
64-character placeholders (JSON of the same length) and rewritten in place at the end.
Everything goes to a temporary file in the destination folder, renamed into place with
``os.replace`` only when complete, so a failure never leaves a partial ``.mcp`` behind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import struct
import secrets
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from mcp.modelfile.spec import (
    FORMAT_TAG,
    METADATA_FORMAT_KEY,
    METADATA_HEADER_KEY,
    ModelHeader,
    ITEM_SIZES,
    TensorSpec,
    storage_dtype,
    stored_shape,
)
from mcp.base.errors import ConfigError, ModelFormatError

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "U8": torch.uint8,
                 "I8": torch.int8}
_NUMPY_DTYPES = {"F32": np.float32, "F16": np.float16, "U8": np.uint8, "I8": np.int8}
_PLACEHOLDER_SHA = "0" * 64
_HEADER_ALIGN = 8

TensorValue = np.ndarray | torch.Tensor


def write_model(
    path: str | os.PathLike, header: ModelHeader, tensors: Mapping[str, TensorValue]
) -> ModelHeader:
    """Write ``header`` and ``tensors`` to ``path`` atomically; return the header as written.

    ``tensors`` maps each name in ``header.tensors`` to its stored representation (see
    ``spec.stored_shape``); it may compute values lazily. ``TensorSpec.sha256`` values in
    ``header`` are ignored and filled in from the bytes written.
    """
    path = Path(path)
    _check_destination(path)
    _check_names(path, header, tensors)
    draft = _with_hashes(header, {spec.name: _PLACEHOLDER_SHA for spec in header.tensors})
    layout = _data_layout(header.tensors)
    fd, tmp_name = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as out:
            prefix = _file_prefix(draft, layout)
            out.write(prefix)
            hashes = _write_data(out, path, header.tensors, layout, tensors)
            final = _with_hashes(header, hashes)
            final_prefix = _file_prefix(final, layout)
            if len(final_prefix) != len(prefix):  # cannot happen: digests have a fixed length
                raise ModelFormatError(f"{path}: header length changed while writing")
            out.seek(0)
            out.write(final_prefix)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return final


def _create_temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path``; created with the umask's permissions (not mkstemp's 0600)."""
    name = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name


def _check_destination(path: Path) -> None:
    if not path.parent.is_dir():
        raise ConfigError(
            f"cannot write {path}: the folder {path.parent} does not exist; "
            "create it first or choose another output path"
        )
    if path.is_dir():
        raise ConfigError(f"cannot write {path}: it is a folder; give a file name ending in .mcp")


def _check_names(path: Path, header: ModelHeader, tensors: Mapping[str, TensorValue]) -> None:
    declared = [spec.name for spec in header.tensors]
    if len(set(declared)) != len(declared):
        raise ModelFormatError(f"{path}: the header lists a tensor name twice")
    missing = sorted(set(declared) - set(tensors))
    extra = sorted(set(tensors) - set(declared))
    if missing or extra:
        raise ModelFormatError(
            f"{path}: tensors do not match the header (missing: {missing}, not in header: {extra})"
        )


def _with_hashes(header: ModelHeader, hashes: Mapping[str, str]) -> ModelHeader:
    specs = tuple(dataclasses.replace(spec, sha256=hashes[spec.name]) for spec in header.tensors)
    return dataclasses.replace(header, tensors=specs)


def _data_layout(specs: tuple[TensorSpec, ...]) -> dict[str, tuple[int, int]]:
    """Byte range of each tensor in the data section: wider items first keeps them aligned,
    and within an item size the tensors of each storage dtype are together in header order,
    so that a layer's q/k/v (and gate/up) codes lie back to back, and so do their group
    parameters, for the loader to fuse them without a copy (``kernels.join_rows``)."""
    order = sorted(
        range(len(specs)),
        key=lambda i: (-ITEM_SIZES[storage_dtype(specs[i].encoding)], storage_dtype(specs[i].encoding), i),
    )
    layout, offset = {}, 0
    for i in order:
        spec = specs[i]
        item_size = ITEM_SIZES[storage_dtype(spec.encoding)]
        nbytes = item_size * math.prod(stored_shape(spec.encoding, spec.shape))
        layout[spec.name] = (offset, offset + nbytes)
        offset += nbytes
    return layout


def _file_prefix(header: ModelHeader, layout: Mapping[str, tuple[int, int]]) -> bytes:
    """The 8-byte little-endian header length and the padded safetensors JSON header."""
    entries: dict[str, object] = {
        "__metadata__": {METADATA_FORMAT_KEY: FORMAT_TAG, METADATA_HEADER_KEY: header.to_json()}
    }
    for spec in header.tensors:
        entries[spec.name] = {
            "dtype": storage_dtype(spec.encoding),
            "shape": list(stored_shape(spec.encoding, spec.shape)),
            "data_offsets": list(layout[spec.name]),
        }
    text = json.dumps(entries, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % _HEADER_ALIGN)
    return struct.pack("<Q", len(text)) + text


def _write_data(out, path: Path, specs, layout, tensors: Mapping[str, TensorValue]) -> dict[str, str]:
    by_name = {spec.name: spec for spec in specs}
    hashes = {}
    for name, _ in sorted(layout.items(), key=lambda item: item[1][0]):
        data = tensor_bytes(path, by_name[name], tensors[name])
        hashes[name] = hashlib.sha256(data).hexdigest()
        out.write(data)
    return hashes


def tensor_bytes(path: Path, spec: TensorSpec, value: TensorValue) -> memoryview:
    """The stored bytes of ``value`` after checking its dtype and shape against ``spec``."""
    dtype = storage_dtype(spec.encoding)
    expected_shape = stored_shape(spec.encoding, spec.shape)
    if tuple(value.shape) != expected_shape:
        raise ModelFormatError(
            f"{path}: tensor {spec.name} ({spec.encoding}) has stored shape {tuple(value.shape)}, "
            f"expected {expected_shape}"
        )
    if isinstance(value, torch.Tensor):
        if value.dtype != TORCH_DTYPES[dtype]:
            raise ModelFormatError(f"{path}: tensor {spec.name} is {value.dtype}, expected {dtype}")
        flat = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
        return memoryview(flat)
    array = np.asarray(value)
    if dtype not in _NUMPY_DTYPES or array.dtype != _NUMPY_DTYPES[dtype]:
        raise ModelFormatError(f"{path}: tensor {spec.name} is numpy {array.dtype}, expected {dtype}")
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
