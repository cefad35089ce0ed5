"""Bad input through a real gateway in front of a real ``mcp2026 serve`` (issue 28, findings 2,
10, 11, 12): a clear 4xx, no breaker opened by it, no connection held by a slow client."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from gateway_process import ACME_KEY, ADMIN_KEY, FREE_KEY

pytestmark = pytest.mark.slow
RULES = {"version": 1, "default": {"backend": {"model_id": "tiny:1", "instance_pool": "a"}}}


@pytest.fixture(scope="module")
def gateway(start_gateway, pools):
    pool = {**pools["a"], "breaker": {"failure_threshold": 3, "cool_down_s": 120}}
    return start_gateway({"gateway": {"header_timeout_s": 1, "body_timeout_s": 1, "max_body_bytes": 4096},
                          "pools": {"a": pool}}, RULES)


def _as(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def test_bad_requests_of_one_tenant_do_not_open_the_breaker_for_the_others(gateway):
    for body in ({"prompt": "\ud800", "max_tokens": 2},
                 {"messages": [{"role": "user", "content": "a\udfff"}], "max_tokens": 2}) * 4:
        path = "/v1/completions" if "prompt" in body else "/v1/chat/completions"
        response = httpx.post(gateway.url + path, content=json.dumps(body), timeout=60,  # the escapes, as JSON
                              headers={**_as(ACME_KEY), "content-type": "application/json"})
        assert response.status_code == 400, response.text
        assert "lone surrogate" in response.json()["error"]["message"]
    good = httpx.post(gateway.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2},
                      headers=_as(FREE_KEY), timeout=60)
    assert good.status_code == 200, good.text
    member = httpx.get(gateway.url + "/admin/pools", headers=_as(ADMIN_KEY)).json()["a"]["members"][0]
    assert (member["breaker"], member["breaker_opened"]) == ("closed", 0)


@pytest.mark.parametrize("depth", [1000, 2000])
def test_deeply_nested_json_is_a_400(gateway, depth):
    body = b'{"prompt": "x", "n": ' + b"[" * depth + b"]" * depth + b"}"
    response = httpx.post(gateway.url + "/v1/completions", content=body, headers=_as(ACME_KEY))
    assert response.status_code == 400, response.text
    assert "nested too deeply" in response.json()["error"]["message"]


def test_repeated_identity_headers_are_refused(gateway):
    headers = [("authorization", f"Bearer {ACME_KEY}"), ("authorization", f"Bearer {FREE_KEY}")]
    response = httpx.post(gateway.url + "/v1/completions", json={"prompt": "Hi"}, headers=headers)
    assert response.status_code == 400 and "header authorization is sent more than once" in response.text


def test_a_chunked_body_over_the_limit_is_413(gateway):
    response = httpx.post(gateway.url + "/v1/completions", content=iter([b" " * 3000] * 3), headers=_as(ACME_KEY))
    assert response.status_code == 413 and "(gateway.max_body_bytes)" in response.text


def test_405_carries_allow(gateway):
    response = httpx.get(gateway.url + "/v1/completions", headers=_as(ACME_KEY))
    assert response.status_code == 405 and response.headers["allow"] == "POST"


def _read_until_closed(sock: socket.socket, bound_s: float = 20.0) -> bytes:
    sock.settimeout(bound_s)
    received, deadline = b"", time.monotonic() + bound_s
    while time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"still open after {bound_s} s: {received!r}")


def test_slow_clients_are_cut_off_and_others_served(gateway):
    with socket.create_connection(("127.0.0.1", gateway.port)) as headers_only:
        headers_only.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthori")
        with socket.create_connection(("127.0.0.1", gateway.port)) as body_short:
            body_short.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                               + ACME_KEY.encode() + b"\r\nContent-Length: 50\r\n\r\n{")
            answer = _read_until_closed(body_short)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"(gateway.body_timeout_s)" in answer
        assert _read_until_closed(headers_only) == b""
    good = httpx.post(gateway.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2},
                      headers=_as(FREE_KEY), timeout=60)
    assert good.status_code == 200
