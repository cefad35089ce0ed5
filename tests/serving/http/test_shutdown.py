"""SIGTERM drains: a stream in flight runs to its end, then the process exits 0."""

from __future__ import annotations

import json
import signal
import time

import httpx
import pytest

pytestmark = pytest.mark.slow


def test_sigterm_lets_the_stream_in_flight_finish(start_server, tiny_mcp):
    server = start_server({"runtime": {"device": "cpu", "num_threads": 1},
                           "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}],
                                       "timeouts": {"shutdown_drain_s": 60}}})
    body = {"model": "tiny", "prompt": "a", "max_tokens": 200, "ignore_eos": True, "temperature": 0.0,
            "stream": True, "stream_options": {"include_usage": True}}
    events = []
    with httpx.stream("POST", server.url + "/v1/completions", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            if not events:
                server.process.send_signal(signal.SIGTERM)
            events.append(line[len("data: "):])
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["usage"]["completion_tokens"] == 200
    assert server.process.wait(60) == 0
    assert "draining in-flight requests" in server.log()
    started = time.monotonic()
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health", timeout=5)
    assert time.monotonic() - started < 5
