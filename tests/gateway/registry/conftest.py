"""Artifact metadata for registry tests that do not care about the artifact itself."""

from __future__ import annotations

import pytest

from mcp.gateway.registry.records import ArtifactMetadata


@pytest.fixture
def artifact() -> ArtifactMetadata:
    return ArtifactMetadata(uri="file:///models/m.gguf", format="gguf", sha256="ab" * 32, size_bytes=1234,
                            name="m", architecture="llama", parameter_count=1000, quantization="Q4_1",
                            context_length=2048, license="apache-2.0", lineage={"general.name": "m"})
