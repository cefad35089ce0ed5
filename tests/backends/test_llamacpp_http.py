"""llama.cpp as a backend in process, and behind a real OpenAI-compatible server on 127.0.0.1
(``python -m llama_cpp.server``), both compared with transformers on the CI suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[llamacpp-server]' (CI does)")

from mcp.backends.base import GenerationParams, ScoreKind
from mcp.backends.llamacpp import LlamaCppBackend
from mcp.backends.openai_http import OpenAIHTTPBackend
from mcp.ops.consistency.runner import compare_candidate
from mcp.ops.consistency.tolerances import load_tolerances

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from servebench.llama_server import python_server_command, started_server, why_not_startable  # noqa: E402

pytestmark = pytest.mark.slow


def _compare(backend, consistency_ci):
    _, suite, inputs, records = consistency_ci
    backend.load()
    try:
        return compare_candidate(backend, "transformers", inputs, records, suite.top_logprobs, load_tolerances())
    finally:
        backend.unload()


def test_llamacpp_in_process_meets_its_floor(consistency_ci):
    model = consistency_ci[0]
    result = _compare(LlamaCppBackend(model.sources.source, threads=2), consistency_ci)
    print(result.summary)
    assert result.scores == "logits" and result.kv_bytes_per_token == 30 * 2 * 3 * 64 * 2
    assert result.passed, result.checks


def test_http_backend_against_llama_cpp_server(consistency_ci, tmp_path):
    reason = why_not_startable()
    if reason is not None:
        pytest.skip(reason)
    model, _, inputs, _ = consistency_ci
    command = lambda port: python_server_command(model.sources.source, 2, 2048, port)  # noqa: E731
    with started_server(command, tmp_path / "server.log") as url:
        backend = OpenAIHTTPBackend(url, model.sources.encode)
        backend.load()
        assert backend.health().ok and backend.model_name
        generation = backend.generate(inputs[0].prompt, GenerationParams(max_tokens=4))
        assert len(generation.token_logprobs) == 4 and generation.text
        result = _compare(backend, consistency_ci)
    print(result.summary)
    assert result.scores == ScoreKind.NONE.value and result.summary.num_positions == 0
    assert result.passed, result.checks
