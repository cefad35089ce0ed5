"""Bad input to a real ``mcp2026 serve`` (the sandboxed worker on) is a clear 4xx, never a 500,
and the server serves on (issue 28, findings 3, 9, 11 and 12). Each test failed before its fix."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

pytestmark = pytest.mark.slow
LIMITS = {"max_body_bytes": 65536, "max_n": 4, "max_choices": 16, "max_tokens": 8}


@pytest.fixture(scope="module")
def server(start_server, tiny_mcp):
    return start_server({"runtime": {"device": "cpu", "num_threads": 1},
                         "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "limits": LIMITS,
                                     "timeouts": {"header_s": 1, "body_s": 1}}})


def _error(response: httpx.Response, status: int, param: str | None = None) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    if param is not None:
        assert error["param"] == param, error
    return error["message"]


def _still_serves(server) -> None:
    reply = httpx.post(server.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2}, timeout=60)
    assert reply.status_code == 200 and reply.json()["choices"][0]["finish_reason"] in ("stop", "length")


@pytest.mark.parametrize("path, body, param", [
    ("/v1/completions", {"prompt": "\ud800", "max_tokens": 2}, "prompt"),
    ("/v1/completions", {"prompt": ["ok", "a\udfffb"], "max_tokens": 2}, "prompt.1"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "\ud800"}], "max_tokens": 2},
     "messages.0.content"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": "text", "text": "x\udc00"}]}]},
     "messages.0.content.0.text"),
    ("/v1/completions", {"prompt": "Hi", "stop": "\ud800"}, "stop"),
])
def test_a_lone_surrogate_is_a_400_naming_the_field(server, path, body, param):
    # As JSON escapes: httpx's json= writes UTF-8, which cannot hold a lone surrogate
    response = httpx.post(server.url + path, content=json.dumps(body), timeout=60,
                          headers={"content-type": "application/json"})
    message = _error(response, 400, param)
    assert "lone surrogate (U+D" in message and message.startswith(f"field {param}:")
    _still_serves(server)


@pytest.mark.parametrize("body, param, text", [
    ({"name": "bad\x00name", "source": "tiny.mcp"}, "name", "a model name or version is 1 to 64 characters"),
    ({"name": "tiny", "version": "1\x00", "source": "tiny.mcp"}, "version", "A-Z, a-z, 0-9"),
    ({"name": "tab\tname", "source": "tiny.mcp"}, "name", "starting with a letter or digit"),
    ({"name": "x" * 65, "source": "tiny.mcp"}, "name", "1 to 64 characters"),
    ({"name": "tiny", "source": "s" * 10_000}, "source", "has 10000 characters; a model source"),
    ({"name": "tiny", "source": "a\x00b.mcp"}, "source", "control character"),
])
def test_admin_names_and_sources_are_checked(server, body, param, text):
    assert text in _error(httpx.post(server.url + "/admin/models", json=body, timeout=60), 400, param)
    swap = httpx.post(server.url + "/admin/models/tiny/swap", json={"version": "v\x07"}, timeout=60)
    assert "a model name or version" in _error(swap, 400, "version")
    _still_serves(server)


def test_a_chunked_body_over_the_limit_is_413(server):
    def chunks():
        for _ in range(10):
            yield b" " * 8000

    response = httpx.post(server.url + "/v1/completions", content=chunks(), timeout=60,
                          headers={"content-type": "application/json"})
    assert "over 65536 bytes (serving.limits.max_body_bytes)" in _error(response, 413)
    assert response.json()["error"]["code"] == "payload_too_large"


def test_405_says_which_methods_are_allowed(server):
    response = httpx.get(server.url + "/v1/completions")
    assert response.status_code == 405 and response.headers["allow"] == "POST"


@pytest.mark.parametrize("name, values", [
    ("authorization", ["Bearer a", "Bearer b"]),
    ("x-tenant-id", ["acme", "other"]),
    ("x-sla-class", ["high", "low"]),
])
def test_a_repeated_identity_header_is_refused(server, name, values):
    headers = [(name, value) for value in values]
    response = httpx.post(server.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2}, headers=headers)
    assert f"header {name} is sent more than once" in _error(response, 400, name)


def test_prompts_times_n_is_capped(server):
    response = httpx.post(server.url + "/v1/completions", json={"prompt": ["p"] * 5000, "max_tokens": 1}, timeout=60)
    assert "5000 choices" in _error(response, 400, "prompt") and "serving.limits.max_choices" in response.text
    response = httpx.post(server.url + "/v1/completions", json={"prompt": ["p"] * 5, "n": 4, "max_tokens": 1})
    assert "20 choices; this server takes at most 16" in _error(response, 400, "prompt")
    ok = httpx.post(server.url + "/v1/completions", json={"prompt": ["p"] * 4, "n": 4, "max_tokens": 1}, timeout=60)
    assert ok.status_code == 200 and len(ok.json()["choices"]) == 16


def _closed_within(sock: socket.socket, bound_s: float) -> bytes:
    """Everything the server sends until it closes the connection (or ``bound_s`` passes: a failure)."""
    sock.settimeout(bound_s)
    received = b""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the connection was still open after {bound_s} s; got {received!r}")


@pytest.mark.parametrize("partial", [b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Ty",
                                     b"GE", b""])
def test_incomplete_headers_are_cut_off(server, partial):
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(partial)
        assert _closed_within(sock, 20) == b""  # closed, nothing answered
    _still_serves(server)


def test_an_incomplete_body_is_408(server):
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"prompt\": ")
        answer = _closed_within(sock, 20)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"connection: close" in answer.lower()
    assert b"not complete within 1 s (serving.timeouts.body_s)" in answer
    _still_serves(server)


def test_a_kept_alive_connection_is_cut_off_mid_headers_too(server):
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(20)
        answer = b""
        while not answer.endswith(b'{"status":"ok"}'):
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /health HTTP/1.1\r\nHo")
        assert _closed_within(sock, 20) == b""
