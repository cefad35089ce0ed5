"""The Messages API under tenants and governance, and request metadata in the audit record: a
real ``mcp2026 serve`` with the default model, API keys, and an SQLite audit trail read back
with SQL. ``x-api-key`` (the anthropic library's header) names the tenant as a bearer key does;
chat completions' ``metadata`` is kept in the record and hashed into the chain."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from sqlalchemy import create_engine

from mcp.governance.audit.verify import verify
from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
KEY, OTHER = "sk-acme-messages", "sk-globex-messages"
ASK = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def governed(start_server, smollm2_auto_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("messages-governed")
    server = start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}],
                    "tenants": [{"name": "acme", "key_sha256": [hash_key(KEY)]},
                                {"name": "globex", "key_sha256": [hash_key(OTHER)]}],
                    "governance": {"audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    return server, folder


def _record(folder: Path, request_id: str) -> sqlite3.Row:
    connection = sqlite3.connect(folder / "audit.db")
    connection.row_factory = sqlite3.Row
    try:
        return connection.execute("SELECT * FROM audit_records WHERE request_id = ?", (request_id,)).fetchone()
    finally:
        connection.close()


def test_x_api_key_and_bearer_name_the_keys_tenant(governed):
    server, folder = governed
    by_header = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
    reply = by_header.messages.create(model="smollm2", max_tokens=3, messages=ASK, extra_body={"temperature": 0})
    assert _record(folder, reply.id)["tenant"] == "acme"
    by_bearer = anthropic.Anthropic(base_url=server.url, auth_token=OTHER, max_retries=0)
    reply = by_bearer.messages.create(model="smollm2", max_tokens=3, messages=ASK, extra_body={"temperature": 0})
    assert _record(folder, reply.id)["tenant"] == "globex" and reply.id.startswith("msg_")
    assert by_header.messages.count_tokens(model="smollm2", messages=ASK).input_tokens > 3


def test_a_wrong_or_missing_key_is_anthropics_authentication_error(governed):
    server, _ = governed
    with pytest.raises(anthropic.AuthenticationError) as refused:
        anthropic.Anthropic(base_url=server.url, api_key="sk-wrong", max_retries=0).messages.create(
            model="smollm2", max_tokens=2, messages=ASK)
    assert refused.value.body == {"type": "error", "error": {
        "type": "authentication_error", "message": "the API key matches no tenant of this server; check the key"}}
    # the same key works on the OpenAI routes through x-api-key
    body = {"model": "smollm2", "prompt": "One,", "max_tokens": 2}
    reply = httpx.post(server.url + "/v1/completions", json=body, headers={"x-api-key": KEY}, timeout=60)
    assert reply.status_code == 200 and reply.json()["choices"]
    missing = httpx.post(server.url + "/v1/messages", json={**body, "messages": ASK}, timeout=60)
    assert missing.status_code == 401 and "x-api-key" in missing.json()["error"]["message"]


def test_two_different_keys_in_one_request_are_refused(governed):
    server, _ = governed
    body = {"model": "smollm2", "max_tokens": 2, "messages": ASK}
    reply = httpx.post(server.url + "/v1/messages", json=body, timeout=60,
                       headers={"x-api-key": KEY, "Authorization": f"Bearer {OTHER}"})
    assert reply.status_code == 400 and reply.json() == {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "headers authorization and x-api-key hold different keys; send one of them"}}
    same = httpx.post(server.url + "/v1/messages", json=body, timeout=60,
                      headers={"x-api-key": KEY, "Authorization": f"Bearer {KEY}"})
    assert same.status_code == 200


def test_chat_metadata_is_kept_in_the_audit_record_and_the_chain_verifies(governed):
    server, folder = governed
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
    tags = {"app": "billing", "run": "7"}
    reply = client.chat.completions.create(model="smollm2", messages=ASK, max_tokens=3, metadata=tags)
    record = _record(folder, reply.id)
    assert json.loads(record["request_metadata"]) == tags and record["tenant"] == "acme"
    plain = client.chat.completions.create(model="smollm2", messages=ASK, max_tokens=3)
    assert _record(folder, plain.id)["request_metadata"] is None
    report = verify(create_engine(f"sqlite:///{folder / 'audit.db'}"))
    assert report.ok, report.problems


def test_messages_user_id_is_kept_as_a_pseudonym_never_the_id(governed):
    server, folder = governed
    client = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
    reply = client.messages.create(model="smollm2", max_tokens=3, messages=ASK, metadata={"user_id": "alice@example"})
    record = _record(folder, reply.id)
    assert record["subject"] and "alice" not in json.dumps(dict(record))
    assert record["route"] == "POST /v1/messages" and record["completion_tokens"] == reply.usage.output_tokens
