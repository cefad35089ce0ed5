"""Fixtures shared by the HTTP tests that talk to the default model through real clients."""

from __future__ import annotations

import openai
import pytest


@pytest.fixture(scope="module")
def smollm2_server(start_server, smollm2_auto_mcp):
    """A real ``mcp2026 serve`` on 127.0.0.1 with the default model, named ``smollm2``."""
    return start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}]},
    })


@pytest.fixture(scope="module")
def smollm2_openai(smollm2_server):
    """The official ``openai`` client pointed at ``smollm2_server``."""
    return openai.OpenAI(base_url=smollm2_server.url + "/v1", api_key="unused", max_retries=0)
