"""A GGUF file, any architecture: its metadata through the modelfile's GGUF reader helpers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gguf import LlamaFileType

from mcp.compiler.gguf_source import open_reader, read_field
from mcp.gateway.registry.artifacts.common import dominant, file_uri
from mcp.gateway.registry.records import ArtifactMetadata
from mcp.modelfile.hashing import file_sha256


def read_gguf(path: Path) -> ArtifactMetadata:
    reader = open_reader(path)
    arch = read_field(path, reader, "general.architecture")
    elements = Counter()
    for tensor in reader.tensors:
        elements[tensor.tensor_type.name] += int(tensor.n_elements)
    context = read_field(path, reader, f"{arch}.context_length", None)
    lineage = {
        "general.name": read_field(path, reader, "general.name", None),
        "general.basename": read_field(path, reader, "general.basename", None),
        "tensor_types": dict(Counter(t.tensor_type.name for t in reader.tensors)),
        "num_tensors": len(reader.tensors),
    }
    return ArtifactMetadata(
        uri=file_uri(path), format="gguf", sha256=file_sha256(path), size_bytes=path.stat().st_size,
        name=path.stem, architecture=arch, parameter_count=sum(elements.values()),
        quantization=_file_type(path, reader) or dominant(elements, ignore=("F32",)),
        context_length=int(context) if context is not None else None,
        license=read_field(path, reader, "general.license", None),
        lineage={k: v for k, v in lineage.items() if v is not None},
    )


def _file_type(path: Path, reader) -> str | None:
    """``general.file_type`` as llama.cpp names it (``MOSTLY_Q4_1`` -> ``Q4_1``)."""
    value = read_field(path, reader, "general.file_type", None)
    if value is None:
        return None
    try:
        return LlamaFileType(int(value)).name.removeprefix("MOSTLY_")
    except ValueError:
        return None
