"""A governed upstream behind a real gateway: the server's report of what its policy redacted
(``x-mcp-redactions``, serving/redactions.py) reaches the client through the gateway, as the
``mcp_redactions`` field of the body does."""

from __future__ import annotations

import shutil

import httpx
import pytest

from gateway_process import FREE_KEY

pytestmark = pytest.mark.slow

REDACT_EMAIL_INPUT = """package mcp.input

import rego.v1

redact contains {"rule": "input.redact_email", "reason": "addresses never reach the model", "kinds": ["email"]} if {
	some f in input.findings
	f.kind == "email"
}
"""


@pytest.fixture(scope="module")
def governed(start_server, tiny_mcp, tmp_path_factory):
    from mcp.governance.policy.bundle import SHIPPED

    folder = tmp_path_factory.mktemp("governed")
    shutil.copytree(SHIPPED, folder / "policies")
    (folder / "policies" / "redact_email.rego").write_text(REDACT_EMAIL_INPUT)
    return start_server({"serving": {
        "models": [{"name": "tiny", "source": str(tiny_mcp), "version": "1"}],
        "governance": {"audit_url": f"sqlite:///{folder / 'audit.db'}", "audit_key_file": str(folder / "audit.key"),
                       "policy_bundle": str(folder / "policies")}}})


def test_the_gateway_relays_what_the_server_redacted(start_gateway, governed):
    pool = {"members": [{"name": "governed", "url": governed.url}], "health": {"interval_s": 0.5, "timeout_s": 1.0}}
    rules = {"version": 1, "routes": [], "default": {"backend": {"model_id": "tiny:1", "instance_pool": "g"}}}
    gateway = start_gateway({"pools": {"g": pool}}, rules)
    body = {"messages": [{"role": "user", "content": "write to ann@example.com and bo@example.org"}], "max_tokens": 2}
    reply = httpx.post(gateway.url + "/v1/chat/completions", json=body, timeout=60,
                       headers={"authorization": f"Bearer {FREE_KEY}"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-mcp-redactions"] == "input.email=2"
    assert reply.json()["mcp_redactions"] == {"count": 2, "input": {"email": 2}, "output": {}}
    plain = httpx.post(gateway.url + "/v1/chat/completions", timeout=60, headers={"authorization": f"Bearer {FREE_KEY}"},
                       json={"messages": [{"role": "user", "content": "hello"}], "max_tokens": 2})
    assert plain.status_code == 200 and "x-mcp-redactions" not in plain.headers
