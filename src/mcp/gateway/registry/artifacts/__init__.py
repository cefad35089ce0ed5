"""Read a model artifact's metadata into ``ArtifactMetadata``, whatever its format.

``read_artifact(path)`` tells the format by what is there: a Triton model folder or
repository (``config.pbtxt``), a Hugging Face folder (``config.json``), a ``.onnx`` file,
a GGUF file (magic ``GGUF`` or ``.gguf``), or a ``.mcp`` file. Anything unreadable is a
``ModelFormatError`` (or ``ModelNotFoundError``) and nothing is registered.
"""

from __future__ import annotations

from pathlib import Path

from mcp.base.errors import ModelFormatError, ModelNotFoundError
from mcp.gateway.registry.records import ArtifactMetadata

FORMATS = ("mcp", "gguf", "hf", "onnx", "triton")


def read_artifact(path: str | Path) -> ArtifactMetadata:
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"{path}: no such file or folder")
    return _reader(path)(path)


def detect_format(path: Path) -> str:
    if path.is_dir():
        from mcp.gateway.registry.artifacts.triton_repo import is_triton

        if is_triton(path):
            return "triton"
        if (path / "config.json").is_file():
            return "hf"
        raise ModelFormatError(f"{path}: not a model folder: a Hugging Face folder has config.json, "
                               "a Triton model has config.pbtxt")
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if path.suffix == ".onnx":
        return "onnx"
    if magic == b"GGUF" or path.suffix == ".gguf":
        return "gguf"
    if path.suffix == ".mcp":
        return "mcp"
    raise ModelFormatError(f"{path}: unknown artifact format; registered artifacts are .mcp, .gguf and .onnx "
                           "files, Hugging Face folders and Triton model folders")


def _reader(path: Path):
    kind = detect_format(path)
    if kind == "triton":
        from mcp.gateway.registry.artifacts.triton_repo import read_triton as read
    elif kind == "hf":
        from mcp.gateway.registry.artifacts.hf_folder import read_hf_folder as read
    elif kind == "onnx":
        from mcp.gateway.registry.artifacts.onnx_file import read_onnx as read
    elif kind == "gguf":
        from mcp.gateway.registry.artifacts.gguf_file import read_gguf as read
    else:
        from mcp.gateway.registry.artifacts.mcp_file import read_mcp as read
    return read


__all__ = ["ArtifactMetadata", "FORMATS", "detect_format", "read_artifact"]
