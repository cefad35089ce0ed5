"""llama.cpp behind its OpenAI API: a running server (``--llama-url``), or one started here.

Started here means, first choice, the C++ ``llama-server`` with ``--parallel N`` slots and
continuous batching (built by ``build_llama_server.sh`` into ``.cache/llama-server/``, or any
binary given with ``--llama-server``). Failing that, ``python -m llama_cpp.server`` from
llama-cpp-python, which needs its
``[server]`` extra (fastapi, uvicorn, sse-starlette, pydantic-settings, starlette-context).
That server runs one request at a time (no ``--parallel`` slots, no continuous batching)
and by default interrupts a streaming request when a new one arrives, so it is started
with ``--interrupt_requests False``; it knows neither ``stream_options`` (its token counts
are then its streamed chunks, one per token) nor ``ignore_eos``, so ``eos_logit_bias`` gives
the end-of-sequence tokens a -100 bias instead: its answers run to ``max_tokens`` as ours do.
The C++ ``llama-server`` (``--parallel N``) is the fair comparison; give its URL.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

START_TIMEOUT_S = 120.0
BUILT_BINARY = Path(__file__).resolve().parents[2] / ".cache" / "llama-server" / "llama-server"


def eos_logit_bias(gguf: Path) -> dict[str, float]:
    """``logit_bias`` that keeps the GGUF's end-of-sequence token from being sampled."""
    from gguf import GGUFReader

    field = GGUFReader(gguf).fields["tokenizer.ggml.eos_token_id"]
    return {str(int(field.parts[field.data[0]][0])): -100.0}


def why_not_startable() -> str | None:
    """None when ``python -m llama_cpp.server`` can run here, else the reason."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install -e '.[llamacpp]')"
    missing = [m for m in ("fastapi", "uvicorn", "sse_starlette", "pydantic_settings", "starlette_context")
               if importlib.util.find_spec(m) is None]
    if missing:
        return f"llama_cpp.server needs the [server] extra of llama-cpp-python (missing: {', '.join(missing)})"
    return None


def python_server_command(gguf: Path, threads: int, context: int, port: int) -> list[str]:
    """``python -m llama_cpp.server``: one request at a time."""
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
            "--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads),
            "--n_ctx", str(context), "--interrupt_requests", "False"]


def cpp_server_command(binary: Path, gguf: Path, threads: int, context: int, parallel: int, port: int) -> list[str]:
    """The C++ ``llama-server``: ``parallel`` slots of ``context`` tokens each, continuous batching."""
    return [str(binary), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
            "--threads", str(threads), "--threads-batch", str(threads), "--ctx-size", str(context * parallel),
            "--parallel", str(parallel), "--cont-batching", "--no-webui"]


@contextmanager
def started_server(command_for_port, log: Path):
    """The server that ``command_for_port(port)`` starts, on a free loopback port; yields its base URL."""
    port = _free_port()
    command = command_for_port(port)
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_ready(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the llama.cpp server exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"{url}/v1/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the llama.cpp server did not answer within {START_TIMEOUT_S:.0f} s; see {log}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
