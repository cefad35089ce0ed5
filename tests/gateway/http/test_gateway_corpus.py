"""The HTTP cases of the bad-input corpus (tests/serving/corpus) through a real gateway in front of
a real ``mcp2026 serve``: the same status as straight to the server, and the gateway serves on."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from gateway_process import ACME_KEY

sys.path.insert(0, str(Path(__file__).parents[2] / "serving" / "corpus"))
from cases import check_http, http_content, load  # noqa: E402

pytestmark = pytest.mark.slow
RULES = {"version": 1, "default": {"backend": {"model_id": "tiny:1", "instance_pool": "a"}}}


@pytest.fixture(scope="module")
def gateway(start_gateway, pools):
    return start_gateway({"pools": {"a": pools["a"]}}, RULES)


@pytest.mark.parametrize("case", load("http.json", gateway=True))
def test_http_case_through_the_gateway(gateway, case):
    headers = [tuple(pair) for pair in case.get("headers", [])]
    if not any(name == "authorization" for name, _ in headers):
        headers.append(("authorization", f"Bearer {ACME_KEY}"))
    response = httpx.request(case["method"], gateway.url + case["path"], content=http_content(case),
                             headers=[("content-type", "application/json"), *headers], timeout=60)
    check_http(case, response, via_gateway=True)
    good = httpx.post(gateway.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 1},
                      headers={"authorization": f"Bearer {ACME_KEY}"}, timeout=60)
    assert good.status_code == 200, good.text
