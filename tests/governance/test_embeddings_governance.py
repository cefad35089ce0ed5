"""Embeddings under the governance plane and the tenants' limits, on a real ``mcp2026 serve`` with
the real all-MiniLM-L6-v2: the input policy refuses a credential (403, recorded), an answered
request leaves one audit record (route, tenant, tokens), and a tenant's requests per minute count
embeddings as they count completions (429 with Retry-After)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import openai
import pytest

from mcp.governance.policy.bundle import SHIPPED
from mcp.serving.tenants import hash_key

CREDENTIAL = "AKIAIOSFODNN7EXAMPLE"
ALICE, LIMITED = "key-alice", "key-limited"


@pytest.fixture(scope="module")
def governed(start_server, minilm_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("governed-embeddings")
    shutil.copytree(SHIPPED, folder / "policies")
    server = start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "serving": {"isolation": "none", "models": [{"name": "minilm", "source": str(minilm_mcp)}],
                    "tenants": [{"name": "alice", "key_sha256": [hash_key(ALICE)]},
                                {"name": "limited", "key_sha256": [hash_key(LIMITED)], "requests_per_minute": 2}],
                    "governance": {"policy_bundle": str(folder / "policies"),
                                   "audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    return server, folder


def client(server, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def records(folder: Path) -> list[sqlite3.Row]:
    connection = sqlite3.connect(folder / "audit.db")
    connection.row_factory = sqlite3.Row
    try:
        return list(connection.execute("SELECT * FROM audit_records ORDER BY seq"))
    finally:
        connection.close()


def test_an_answered_embedding_leaves_one_audit_record(governed):
    server, folder = governed
    before = len(records(folder))
    answer = client(server, ALICE).embeddings.create(model="minilm", input=["hello world", "今天天气很好"])
    assert len(answer.data) == 2
    added = records(folder)[before:]
    assert len(added) == 1
    record = added[0]
    assert (record["route"], record["tenant"], record["status"]) == ("POST /v1/embeddings", "alice", "ok")
    assert record["prompt_tokens"] == answer.usage.prompt_tokens and record["completion_tokens"] == 0
    assert (record["model"], record["model_version"]) == ("minilm", "1")


def test_a_credential_in_an_input_is_refused_and_recorded(governed):
    server, folder = governed
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client(server, ALICE).embeddings.create(model="minilm", input=["fine", f"my key is {CREDENTIAL}"])
    assert refused.value.body["code"] == "policy_denied"
    assert records(folder)[-1]["status"] == "denied" and records(folder)[-1]["route"] == "POST /v1/embeddings"
    assert CREDENTIAL not in server.log()


def test_a_tenants_rate_limit_counts_embeddings(governed):
    server, _ = governed
    limited = client(server, LIMITED)
    for _ in range(2):
        limited.embeddings.create(model="minilm", input="within the limit")
    with pytest.raises(openai.RateLimitError) as refused:
        limited.embeddings.create(model="minilm", input="one too many")
    assert refused.value.response.headers.get("retry-after") is not None
    assert client(server, ALICE).embeddings.create(model="minilm", input="another tenant").data  # others go on
