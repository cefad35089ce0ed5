"""Tool calling and structured output from llama-index (``OpenAILike``) and instructor, against a
real ``mcp2026 serve`` with the default model.

Their releases pin openai < 3 (llama-index-llms-openai) or a jiter older than openai 3 takes
(instructor), so they cannot live in the test venv beside openai 3.x: ``.ci/clients-openai2``
installs them into ``.venv-clients`` and each case runs ``clients/calls.py`` there, against the
server this venv started; the test asserts on the JSON the client's result is printed as. Both
libraries force a call (llama-index's ``tool_required``, instructor's TOOLS mode names the
function) or send a JSON Schema; the server's grammar holds the 135M model to the schema, and
greedy decoding keeps the answers deterministic. Each test asserts the arguments or the parsed
object, not only a 200."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
CALLS = Path(__file__).parent / "clients" / "calls.py"
CLIENTS_VENV = Path(os.environ.get("MCP_CLIENTS_VENV", ROOT / ".venv-clients"))


@pytest.fixture(scope="module")
def run(smollm2_server):
    python = CLIENTS_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"needs the venv of the clients that pin openai < 3 at {CLIENTS_VENV}: "
                    "run `bash .ci/clients-openai2`")

    def call(case: str) -> dict:
        done = subprocess.run([str(python), str(CALLS), smollm2_server.url, case], capture_output=True, text=True,
                              timeout=300, env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")})
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return call


def test_llamaindex_chat_with_tools_gives_a_call_with_arguments(run):
    (call,) = run("llamaindex_chat_with_tools")["calls"]
    assert call["name"] == "get_weather" and "paris" in call["kwargs"]["city"].lower()


def test_llamaindex_predict_and_call_runs_the_tool(run):
    (source,) = run("llamaindex_predict_and_call")["sources"]
    assert source["name"] == "get_weather" and source["output"].endswith(": 21 C, clear")
    assert "paris" in source["kwargs"]["city"].lower()


def test_llamaindex_structured_llm_returns_the_pydantic_object(run):
    answer = run("llamaindex_structured")
    assert answer["type"] == "Weather" and answer["raw"]["city"].strip() and isinstance(answer["raw"]["celsius"], int)
    assert json.loads(answer["content"]) == answer["raw"]


@pytest.mark.parametrize("mode", ["tools", "json", "json_schema"])
def test_instructor_modes_return_the_parsed_object(run, mode):
    answer = run(f"instructor_{mode}")
    assert answer["type"] == "City" and answer["raw"]["name"].strip() and answer["raw"]["country"].strip()
