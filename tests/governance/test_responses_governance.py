"""The governance plane on ``POST /v1/responses``: a real ``mcp2026 serve`` with a tiny model, the
shipped policies and an SQLite audit trail, called with the official openai client's Responses
API. The route runs chat's lifecycle, so a refusal is chat's 403 and every answer, whole or
streamed, has its one audit record (route ``POST /v1/responses``) before it arrives."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import openai
import pytest

from mcp.governance.policy.bundle import SHIPPED

pytestmark = pytest.mark.slow
KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture(scope="module")
def governed(start_server, tiny_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("governed-responses")
    shutil.copytree(SHIPPED, folder / "policies")
    server = start_server({
        "runtime": {"device": "cpu"},
        "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}],
                    "governance": {"policy_bundle": str(folder / "policies"),
                                   "audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0), folder


def _records(folder: Path) -> dict[str, sqlite3.Row]:
    connection = sqlite3.connect(folder / "audit.db")
    connection.row_factory = sqlite3.Row
    try:
        return {row["request_id"]: row for row in connection.execute("SELECT * FROM audit_records")}
    finally:
        connection.close()


def test_a_credential_in_the_input_is_refused_and_recorded(governed) -> None:
    client, folder = governed
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client.responses.create(model="tiny", max_output_tokens=4,
                                input=[{"role": "user", "content": f"my key is {KEY}, fix my script"}])
    assert refused.value.body["code"] == "policy_denied"
    denied = [r for r in _records(folder).values() if r["status"] == "denied"]
    assert denied[-1]["route"] == "POST /v1/responses" and '"rules":["input.credentials"]' in denied[-1]["decisions"]


def test_whole_and_streamed_answers_have_their_records(governed) -> None:
    client, folder = governed
    reply = client.responses.create(model="tiny", input="Hello there", max_output_tokens=5, temperature=0)
    record = _records(folder)[reply.id]
    assert record["status"] == "ok" and record["route"] == "POST /v1/responses"
    assert record["output_sha256"] == hashlib.sha256(reply.output_text.encode()).hexdigest()
    assert record["completion_tokens"] == reply.usage.output_tokens
    events = list(client.responses.create(model="tiny", input="Hi", max_output_tokens=6, temperature=0,
                                          stream=True))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    record = _records(folder)[events[-1].response.id]
    assert record["status"] == "ok" and record["output_sha256"] == hashlib.sha256(text.encode()).hexdigest()
