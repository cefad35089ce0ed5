"""A real ``mcp2026 serve`` with two models, each in its worker: SIGKILL one worker while it
streams a request and while it runs a plain one. The stream ends with a worker_unavailable
error event, the plain request gets a 503, the other model answers meanwhile, and the killed
model answers again once its worker is restarted."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx
import pytest

pytestmark = pytest.mark.slow
LONG = {"model": "big", "prompt": "Count from one to a thousand:", "max_tokens": 2000, "ignore_eos": True,
        "temperature": 0.0}


@pytest.fixture(scope="module")
def server(start_server, smollm2_mcp, tiny_mcp):
    return start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "serving": {"models": [{"name": "big", "source": str(smollm2_mcp)},
                               {"name": "tiny", "source": str(tiny_mcp)}],
                    "worker": {"restart_backoff_s": 0.1}},
    })


def _tiny_answers(server) -> int:
    body = {"model": "tiny", "prompt": "Hello", "max_tokens": 4, "temperature": 0.0}
    return httpx.post(server.url + "/v1/completions", json=body, timeout=60).status_code


def _wait_restarted(server, restarts: int) -> None:
    deadline = time.monotonic() + 120
    while server.metric("mcp_worker_restarts_total", model="big") < restarts:
        assert time.monotonic() < deadline, "the killed worker was not restarted"
        time.sleep(0.2)


def test_a_stream_on_a_killed_worker_ends_with_a_clean_error(server):
    with httpx.stream("POST", server.url + "/v1/completions", json={**LONG, "stream": True}, timeout=120) as reply:
        lines = reply.iter_lines()
        assert next(line for line in lines if line.startswith("data:"))  # generating in the worker
        os.kill(server.worker_pid("big:1"), signal.SIGKILL)
        assert _tiny_answers(server) == 200  # the other model's worker is unaffected
        events = [json.loads(line[5:]) for line in lines if line.startswith("data:") and line != "data: [DONE]"]
    error = events[-1]["error"]
    assert error["code"] == "worker_unavailable" and error["type"] == "server_error"
    assert "big:1 was killed by SIGKILL while this request ran; it is being restarted" in error["message"]
    _wait_restarted(server, 1)
    body = {"model": "big", "prompt": "Hi", "max_tokens": 3, "temperature": 0.0}
    assert httpx.post(server.url + "/v1/completions", json=body, timeout=120).status_code == 200
    assert server.metric("mcp_worker_up", model="big") == 1


def test_a_plain_request_on_a_killed_worker_gets_503(server):
    replies: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: replies.append(
        httpx.post(server.url + "/v1/completions", json=LONG, timeout=120)))
    thread.start()
    deadline = time.monotonic() + 60
    while server.metric("mcp_num_requests_running", model="big") < 1:
        assert time.monotonic() < deadline, "the request never started"
        time.sleep(0.05)
    before = server.metric("mcp_worker_restarts_total", model="big")
    os.kill(server.worker_pid("big:1"), signal.SIGKILL)
    thread.join(120)
    reply = replies[0]
    assert reply.status_code == 503 and reply.headers["retry-after"] == "2"
    assert reply.json()["error"]["code"] == "worker_unavailable"
    assert _tiny_answers(server) == 200
    _wait_restarted(server, before + 1)
