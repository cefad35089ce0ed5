"""The output policy on the real default model: SmolLM2 repeats an e-mail address from a
few-shot prompt; the shipped policy redacts it, whole and streamed (no chunk carries any of it),
and a policy of our own stops the answer for one tenant (``content_filter``)."""

from __future__ import annotations

import shutil
import sqlite3

import httpx
import openai
import pytest

from mcp.governance.policy.bundle import SHIPPED

pytestmark = pytest.mark.slow
PROMPT = "Contact: jane.doe@example.com\nContact: jane.doe@example.com\nContact:"
STRICT_RULE = """package mcp.output

import rego.v1

deny contains {"rule": "output.strict_no_email", "reason": "tenant strict may not receive e-mail addresses"} if {
	input.tenant.name == "strict"
	some f in input.findings
	f.kind == "email"
}
"""


@pytest.fixture(scope="module")
def server(start_server, smollm2_auto_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("output-policy")
    shutil.copytree(SHIPPED, folder / "policies")
    (folder / "policies" / "strict.rego").write_text(STRICT_RULE)
    server = start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 256 * 16 * 46080},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}],
                    "governance": {"policy_bundle": str(folder / "policies"), "stream_window_chars": 32,
                                   "audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    server.folder = folder
    return server


def test_pii_in_a_whole_answer_is_redacted(server) -> None:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    reply = client.completions.create(model="smollm2", prompt=PROMPT, max_tokens=12, temperature=0)
    assert reply.choices[0].text.startswith(" [REDACTED:email]") and "jane" not in reply.choices[0].text
    connection = sqlite3.connect(server.folder / "audit.db")
    decisions = connection.execute("SELECT decisions FROM audit_records WHERE request_id = ?",
                                   (reply.id,)).fetchone()[0]
    connection.close()
    assert '"action":"redact"' in decisions and "output.redact_pii" in decisions


def test_pii_split_across_streamed_chunks_is_redacted(server) -> None:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    chunks = [c.choices[0].text for c in client.completions.create(
        model="smollm2", prompt=PROMPT, max_tokens=12, temperature=0, stream=True) if c.choices]
    assert "".join(chunks).startswith(" [REDACTED:email]")
    assert not any(part in chunk for chunk in chunks for part in ("jane", "doe", "example"))


def test_a_tenant_policy_stops_the_answer(server) -> None:
    response = httpx.post(server.url + "/v1/completions", headers={"x-tenant": "strict"}, timeout=120,
                          json={"model": "smollm2", "prompt": PROMPT, "max_tokens": 12, "temperature": 0})
    choice = response.json()["choices"][0]
    assert response.status_code == 200 and choice["finish_reason"] == "content_filter"
    assert "jane" not in choice["text"] and "REDACTED" not in choice["text"]
