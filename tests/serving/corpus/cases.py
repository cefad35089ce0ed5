"""Load the bad-input corpus (README.md beside this file) and check answers against it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def load(name: str, gateway: bool = False) -> list:
    """The cases of ``name`` (http.json, grpc.json) as pytest params; a pending one is a strict xfail."""
    cases = json.loads((HERE / name).read_text())
    if gateway:
        cases = [c for c in cases if c.get("gateway", True) and "pending" not in c]
    return [pytest.param(c, id=c["id"], marks=[pytest.mark.xfail(strict=True, reason=f"waits for {c['pending']}")]
                         if "pending" in c else []) for c in cases]


def expanded(fields: dict, case: dict, lists: str, strings: str) -> dict:
    """``fields`` with the case's long lists and strings put in."""
    fields = dict(fields)
    fields.update({key: [unit] * times for key, (unit, times) in case.get(lists, {}).items()})
    fields.update({key: unit * times for key, (unit, times) in case.get(strings, {}).items()})
    return fields


def http_content(case: dict) -> bytes | Iterator[bytes] | None:
    """The body to send: JSON, raw bytes, or raw bytes in chunks (no Content-Length)."""
    if "raw_parts" in case:
        raw = b"".join(text.encode() * times for text, times in case["raw_parts"])
        return iter([raw[i:i + 65536] for i in range(0, len(raw), 65536)]) if case.get("chunked") else raw
    if "body" in case:
        return json.dumps(expanded(case["body"], case, "body_lists", "body_strings")).encode()
    return None


def check_http(case: dict, response, via_gateway: bool = False) -> None:
    statuses = case["status"] if isinstance(case["status"], list) else [case["status"]]
    assert response.status_code in statuses, (case["id"], response.status_code, response.text[:500])
    if response.status_code < 400:  # a request that once broke the server and must be served
        assert "error" not in response.json() and response.json()["choices"], (case["id"], response.text[:500])
        return
    error = response.json()["error"]
    expected = case.get("gateway_error", case["error"]) if via_gateway else case["error"]
    assert expected in error["message"], (case["id"], error)
    if "param" in case:
        assert error["param"] == case["param"], (case["id"], error)
    if "error_absent" in case:
        assert case["error_absent"] not in response.text, (case["id"], response.text[:500])
    for name, value in case.get("headers_out", {}).items():
        assert response.headers.get(name) == value, (case["id"], dict(response.headers))
