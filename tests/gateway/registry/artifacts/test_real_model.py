"""The real default model's GGUF and its compiled .mcp land in the registry with the
figures measured in REFERENCE.md (134,515,008 parameters, Q4_1, 98,362,432 bytes)."""

from __future__ import annotations

import pytest

from mcp.compiler.catalog import CATALOG, DEFAULT_MODEL
from mcp.gateway.registry.artifacts import read_artifact
from mcp.gateway.registry.stages import Stage

pytestmark = pytest.mark.slow


def test_default_gguf(smollm2_gguf):
    meta = read_artifact(smollm2_gguf)
    assert (meta.format, meta.architecture, meta.quantization) == ("gguf", "llama", "Q4_1")
    assert (meta.parameter_count, meta.size_bytes) == (134_515_008, 98_362_432)
    assert meta.sha256 == CATALOG[DEFAULT_MODEL].gguf_sha256
    assert meta.context_length == 8192 and meta.lineage["tensor_types"]["Q8_0"] == 1


def test_default_mcp_registered_beside_its_gguf(smollm2_mcp, smollm2_gguf, registry):
    meta = read_artifact(smollm2_mcp)
    assert (meta.format, meta.name, meta.architecture, meta.quantization) == ("mcp", DEFAULT_MODEL, "llama", "q4_1")
    assert meta.parameter_count == 134_515_008 and meta.context_length == 8192
    assert meta.lineage["source_sha256"] == CATALOG[DEFAULT_MODEL].gguf_sha256
    registry.register(read_artifact(smollm2_gguf), "smollm2", "gguf-1")
    registry.register(meta, "smollm2", "mcp-1", Stage.PRODUCTION)
    assert {v.version: (v.format, v.stage) for v in registry.versions("smollm2")} == {
        "gguf-1": ("gguf", Stage.STAGING), "mcp-1": ("mcp", Stage.PRODUCTION)}
