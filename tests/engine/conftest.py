"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest

from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.modelfile.reader import open_model


@pytest.fixture(scope="module")
def fp32_engine(smollm2_mcp) -> NativeEngine:
    """The default model in fp32 on the CPU: a sequence's logits do not depend on its batch."""
    with open_model(smollm2_mcp) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))
