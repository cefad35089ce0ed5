"""A ``.mcp`` file, read by the modelfile reader (header and integrity checks included)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from mcp.gateway.registry.artifacts.common import dominant, file_uri, product
from mcp.gateway.registry.records import ArtifactMetadata
from mcp.modelfile.hashing import file_sha256
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import DENSE_ENCODINGS, QPARAMS_SUFFIX, SCALE_ZERO_SUFFIX, ModelHeader


def read_mcp(path: Path) -> ArtifactMetadata:
    with open_model(path) as model_file:
        header = model_file.header
    # through JSON once, so the record holds what the database gives back (lists, not tuples)
    lineage = json.loads(json.dumps({k: v for k, v in asdict(header.lineage).items() if v is not None}))
    lineage["format_version"] = header.format_version
    return ArtifactMetadata(
        uri=file_uri(path), format="mcp", sha256=file_sha256(path), size_bytes=path.stat().st_size,
        name=header.name, architecture=header.architecture.variant,
        parameter_count=parameter_count(header), quantization=quantization(header),
        context_length=header.architecture.max_position_embeddings, license=header.lineage.license,
        lineage=lineage, base_model=header.lineage.base_model, source_sha256=header.lineage.source_sha256,
        datasets=tuple(lineage["datasets"]),
        signature_status="signed" if path.with_name(path.name + ".sig").is_file() else "unsigned",
    )


def _weights(header: ModelHeader):
    """Tensor specs of the weights themselves, without the int4/int8 companions."""
    return [t for t in header.tensors if not t.name.endswith((QPARAMS_SUFFIX, SCALE_ZERO_SUFFIX))]


def parameter_count(header: ModelHeader) -> int:
    return sum(product(t.shape) for t in _weights(header))


def quantization(header: ModelHeader) -> str | None:
    elements = Counter()
    for spec in _weights(header):
        elements[spec.encoding] += product(spec.shape)
    return dominant(elements, ignore=("f32",) if set(elements) - set(DENSE_ENCODINGS) else ())
