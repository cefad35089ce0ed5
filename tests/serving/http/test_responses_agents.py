"""openai-agents against a real ``mcp2026 serve`` with the default model: an Agent with a function
tool, through OpenAIResponsesModel (the SDK's default, ``/v1/responses``) and through
OpenAIChatCompletionsModel (``/v1/chat/completions``).

openai-agents depends on the Model Context Protocol SDK, whose ``mcp`` package is a regular one:
in the same environment as this project's editable install it would hide our ``mcp`` namespace
(tests/runtime/test_namespace.py). So the agent runs in a venv of its own, made here with the
pinned version on top of this environment's packages (appended after its own, as in
test_namespace.py), and talks to the server over loopback like any client. The tool call is
forced (``tool_choice`` names it; the grammar writes it), the SDK runs the tool, sends its output
back as a ``function_call_output`` item and the model answers."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
OPENAI_AGENTS = "openai-agents==0.24.0"  # the version these tests were written against
SCRIPT = Path(__file__).parent / "clients" / "agents_weather.py"


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args}: {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def agents_python(tmp_path_factory) -> str:
    """A venv's python with openai-agents (and the MCP SDK it needs), this environment's packages after its own."""
    venv = tmp_path_factory.mktemp("openai-agents") / "venv"
    _run(sys.executable, "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    Path(site, "zz_host_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", OPENAI_AGENTS)
    return python


@pytest.mark.parametrize("kind", ["responses", "chat"])
def test_agent_calls_its_function_tool_and_answers(agents_python, smollm2_server, kind):
    out = _run(agents_python, str(SCRIPT), smollm2_server.url + "/v1", kind, timeout=300).stdout
    run = json.loads(out.strip().splitlines()[-1])
    (call,) = run["calls"]
    assert "paris" in call["city"].lower()
    assert run["items"] == ["tool_call_item", "tool_call_output_item", "message_output_item"]
    assert isinstance(run["final_output"], str) and run["final_output"].strip()
