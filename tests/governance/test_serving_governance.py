"""Governance end to end: a real ``mcp2026 serve`` with a tiny model, the shipped policies, an
SQLite audit trail and a real OTLP/HTTP receiver, called with the official openai client."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import sys
from pathlib import Path

import httpx
import openai
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from otlp_receiver import OTLPReceiver  # noqa: E402

from mcp.commands.cli import main  # noqa: E402
from mcp.governance.audit.keys import AuditKeys  # noqa: E402
from mcp.governance.policy.bundle import SHIPPED  # noqa: E402

KEY = "AKIAIOSFODNN7EXAMPLE"
# a rule that answers malformed items for one tenant only (so the start-up check passes)
BROKEN_RULE = 'package mcp.input\n\nimport rego.v1\n\ndeny contains "no rule id" if input.tenant.name == "broken"\n'
TRACE_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def receiver():
    receiver = OTLPReceiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def governed(start_server, tiny_mcp, receiver, tmp_path_factory):
    folder = tmp_path_factory.mktemp("governed")
    shutil.copytree(SHIPPED, folder / "policies")
    (folder / "policies" / "broken.rego").write_text(BROKEN_RULE)
    server = start_server({
        "runtime": {"device": "cpu"},
        "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}],
                    "governance": {"policy_bundle": str(folder / "policies"),
                                   "audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key"), "capture": True,
                                   "otlp_endpoint": receiver.endpoint, "terms": ["Project Falcon"]}},
    })
    return server, folder


@pytest.fixture(scope="module")
def client(governed):
    return openai.OpenAI(base_url=governed[0].url + "/v1", api_key="unused", max_retries=0)


def _records(folder: Path) -> dict[str, sqlite3.Row]:
    connection = sqlite3.connect(folder / "audit.db")
    connection.row_factory = sqlite3.Row
    try:
        return {row["request_id"]: row for row in connection.execute("SELECT * FROM audit_records")}
    finally:
        connection.close()


def test_a_prompt_with_a_credential_is_refused_with_the_rules_reason(governed, client) -> None:
    server, folder = governed
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client.chat.completions.create(model="tiny", max_tokens=4,
                                       messages=[{"role": "user", "content": f"my key is {KEY}, fix my script"}])
    error = refused.value.body
    assert refused.value.status_code == 403 and error["code"] == "policy_denied"
    assert error["type"] == "permission_denied"
    assert error["message"] == ("the prompt carries a credential (aws_access_key); remove it and retry "
                                "(policy rule input.credentials)")
    denied = [r for r in _records(folder).values() if r["status"] == "denied"]
    assert denied and '"rules":["input.credentials"]' in denied[-1]["decisions"]
    assert KEY not in server.log()  # neither the log nor the record holds the key
    reply = client.completions.create(model="tiny", prompt="Hello there", max_tokens=3, temperature=0)
    assert reply.choices[0].text is not None  # the server goes on serving


def test_a_failing_policy_is_a_500_that_is_recorded(governed) -> None:
    server, folder = governed
    response = httpx.post(server.url + "/v1/completions", headers={"x-tenant": "broken"}, timeout=60,
                          json={"model": "tiny", "prompt": "Hi", "max_tokens": 2})
    assert response.status_code == 500 and response.json()["error"]["type"] == "server_error"
    assert "each item must be an object with string \"rule\" and \"reason\"" in response.json()["error"]["message"]
    assert [r["status"] for r in _records(folder).values() if r["tenant"] == "broken"] == ["error:policy"]


def test_each_answer_has_its_audit_record_committed_before_it_arrives(governed, client) -> None:
    _, folder = governed
    prompt = "Tell me about Project Falcon"
    reply = client.completions.create(model="tiny", prompt=prompt, max_tokens=5, temperature=0, user="alice")
    record = _records(folder)[reply.id]
    keys = AuditKeys.from_file(folder / "audit.key")
    assert record["status"] == "ok" and record["tenant"] == "default" and record["subject"] == keys.pseudonym("default", "alice")
    assert record["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
    assert record["output_sha256"] == hashlib.sha256(reply.choices[0].text.encode()).hexdigest()
    assert (record["prompt_tokens"], record["completion_tokens"]) == (reply.usage.prompt_tokens,
                                                                      reply.usage.completion_tokens)
    assert (record["model"], record["model_version"], record["route"]) == ("tiny", "1", "POST /v1/completions")
    assert '"action":"allow"' in record["decisions"] and len(record["trace_id"]) == 32


def test_a_streamed_answer_has_its_record_too(governed, client) -> None:
    _, folder = governed
    chunks = list(client.chat.completions.create(model="tiny", max_tokens=6, temperature=0, stream=True,
                                                 messages=[{"role": "user", "content": "Hi"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    record = _records(folder)[chunks[0].id]
    assert record["status"] == "ok" and record["route"] == "POST /v1/chat/completions"
    assert record["output_sha256"] == hashlib.sha256(text.encode()).hexdigest()


def _sample(metrics: str, name: str, **labels: str) -> float:
    wanted = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else ""  # sorted, as exposed
    for line in metrics.splitlines():
        if line.startswith(name + wanted + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_decisions_by_rule_and_audit_writes(governed, client) -> None:
    server, folder = governed
    before = httpx.get(server.url + "/metrics", timeout=30).text
    with pytest.raises(openai.PermissionDeniedError):
        client.completions.create(model="tiny", prompt=f"use {KEY} please", max_tokens=2)
    client.completions.create(model="tiny", prompt="Hello", max_tokens=2, temperature=0)
    after = httpx.get(server.url + "/metrics", timeout=30).text
    deny = {"stage": "input", "action": "deny", "rule": "input.credentials"}
    allow = {"stage": "input", "action": "allow", "rule": ""}
    assert _sample(after, "mcp_policy_decisions_total", **deny) == _sample(before, "mcp_policy_decisions_total", **deny) + 1
    assert _sample(after, "mcp_policy_decisions_total", **allow) >= _sample(before, "mcp_policy_decisions_total", **allow) + 1
    for status in ("denied", "ok"):
        assert _sample(after, "mcp_audit_records_total", status=status) >= \
            _sample(before, "mcp_audit_records_total", status=status) + 1
    assert _sample(after, "mcp_audit_write_lag_seconds_count") >= _sample(before, "mcp_audit_write_lag_seconds_count") + 2


def test_spans_follow_genai_conventions_and_carry_no_prompt_text(governed, receiver) -> None:
    server, folder = governed
    prompt = "The secret codeword is periwinkle"
    response = httpx.post(server.url + "/v1/completions", timeout=60, headers={
        "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
        json={"model": "tiny", "prompt": prompt, "max_tokens": 4, "temperature": 0})
    assert response.status_code == 200
    span = receiver.wait_for(lambda s: s["attributes"].get("gen_ai.response.id") == response.json()["id"])[0]
    assert span["name"] == "text_completion tiny" and span["trace_id"] == TRACE_ID
    assert span["parent_span_id"] == PARENT_ID and span["kind"] == 2  # SERVER
    attributes = span["attributes"]
    assert attributes["gen_ai.operation.name"] == "text_completion"
    assert attributes["gen_ai.request.model"] == "tiny" and attributes["gen_ai.response.model"] == "tiny:1"
    assert attributes["gen_ai.usage.output_tokens"] == response.json()["usage"]["completion_tokens"]
    assert attributes["gen_ai.request.max_tokens"] == 4 and attributes["llm.model.name"] == "tiny"
    assert attributes["llm.prompt.hash"] == hashlib.sha256(prompt.encode()).hexdigest()
    assert attributes["gen_ai.response.finish_reasons"] == [response.json()["choices"][0]["finish_reason"]]
    children = receiver.wait_for(lambda s: s["trace_id"] == TRACE_ID and s["parent_span_id"] == span["span_id"])
    assert {"policy input", "queue", "prefill", "decode", "policy output"} <= {s["name"] for s in children}
    assert _records(folder)[response.json()["id"]]["trace_id"] == TRACE_ID
    assert not any(b"periwinkle" in body for body in receiver.bodies)


def test_the_chain_verifies_and_a_users_capture_is_exported_then_erased(governed, client, capsys) -> None:
    _, folder = governed
    client.completions.create(model="tiny", prompt="Bob's question", max_tokens=3, temperature=0, user="bob")
    base = ["audit", "--db", f"sqlite:///{folder / 'audit.db'}", "--key-file", str(folder / "audit.key")]
    assert main([*base, "export", "--tenant", "default", "--subject", "bob"]) == 0
    assert '"capture": {"prompt": "Bob\'s question"' in capsys.readouterr().out
    assert main([*base, "erase", "--tenant", "default", "--subject", "bob"]) == 0
    assert main([*base, "export", "--tenant", "default", "--subject", "bob"]) == 0
    assert "capture" not in capsys.readouterr().out.split("\n", 1)[1]
    assert main([*base, "verify"]) == 0
    assert "audit chain ok" in capsys.readouterr().out
