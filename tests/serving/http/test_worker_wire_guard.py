"""A real ``mcp2026 serve`` (the model in its isolated worker, the default) with the real model:
a sampling value the worker wire cannot carry (an integer past 64 bits, NaN, infinity) is a 400
naming the field, and the model goes on answering; the worker is never restarted for it.

Before the fix, ``"top_k": 10**29`` passed the API, killed the supervisor's writer thread, and
every later request to the model waited 30 s for a 503 while the probes said ready."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.slow
GOOD = {"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 3, "temperature": 0.0}


@pytest.fixture(scope="module")
def server(start_server, smollm2_mcp):
    return start_server({"runtime": {"device": "cpu", "num_threads": 1},
                         "serving": {"models": [{"name": "smol", "source": str(smollm2_mcp)}]}})


def _post(server, raw: bytes) -> httpx.Response:
    return httpx.post(server.url + "/v1/chat/completions", content=raw, timeout=60,
                      headers={"content-type": "application/json"})


@pytest.mark.parametrize("field, value", [
    ("top_k", "100000000000000000000000000000"), ("seed", "18446744073709551616"),
    ("max_tokens", "100000000000000000000000000000"), ("temperature", "NaN"),
    ("repetition_penalty", "Infinity"), ("top_p", "-Infinity"),
])
def test_an_unwireable_value_is_a_400_and_the_model_still_answers(server, field: str, value: str) -> None:
    raw = (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "%s": %s}'
           % (field.encode(), value.encode()))
    refused = _post(server, raw)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["param"] == field and error["type"] == "invalid_request_error"
    answered = httpx.post(server.url + "/v1/chat/completions", json=GOOD, timeout=60)
    assert answered.status_code == 200, answered.text
    assert answered.json()["usage"]["completion_tokens"] == 3
    assert httpx.get(server.url + "/ready").status_code == 200
    assert server.metric("mcp_worker_up") == 1 and server.metric("mcp_worker_restarts_total") == 0


def test_the_largest_values_the_wire_carries_are_served(server) -> None:
    body = {**GOOD, "top_k": 2**31 - 1, "seed": 2**64 - 1}
    answered = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=60)
    assert answered.status_code == 200, answered.text
    too_big = httpx.post(server.url + "/v1/chat/completions", json={**GOOD, "top_k": 2**31}, timeout=60)
    assert too_big.status_code == 400 and too_big.json()["error"]["param"] == "top_k"
