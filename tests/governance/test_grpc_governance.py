"""Governance over gRPC: the same plane as HTTP on a real ``mcp2026 serve`` with its gRPC API —
PERMISSION_DENIED with the rule's reason, an audit record per call (unary and streamed, the
trace id from ``traceparent`` metadata), and an output rule that stops a stream."""

from __future__ import annotations

import shutil
import socket
import sqlite3
from pathlib import Path

import grpc
import pytest

from mcp.governance.audit.keys import AuditKeys
from mcp.governance.policy.bundle import SHIPPED
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc

MUTE_RULE = """package mcp.output

import rego.v1

deny contains {"rule": "output.mute", "reason": "tenant mute gets no output"} if {
	input.tenant.name == "mute"
}
"""
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def served(start_server, tiny_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("grpc-governed")
    shutil.copytree(SHIPPED, folder / "policies")
    (folder / "policies" / "mute.rego").write_text(MUTE_RULE)
    port = _free_port()
    server = start_server({
        "runtime": {"device": "cpu"},
        "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "grpc": {"enabled": True, "port": port},
                    "governance": {"policy_bundle": str(folder / "policies"),
                                   "audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield pb_grpc.InferenceServiceStub(channel), folder
    channel.close()


def _record(folder: Path, request_id: str) -> sqlite3.Row:
    connection = sqlite3.connect(folder / "audit.db")
    connection.row_factory = sqlite3.Row
    try:
        return connection.execute("SELECT * FROM audit_records WHERE request_id = ?", (request_id,)).fetchone()
    finally:
        connection.close()


def test_a_denied_prompt_is_permission_denied_with_the_rules_reason(served) -> None:
    stub, _ = served
    with pytest.raises(grpc.RpcError) as refused:
        stub.Infer(pb.InferRequest(prompt="key AKIAIOSFODNN7EXAMPLE", sampling=pb.SamplingParams(max_tokens=2)))
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refused.value.details() == ("the prompt carries a credential (aws_access_key); remove it and retry "
                                       "(policy rule input.credentials)")
    assert ("x-error-code", "policy_denied") in tuple(refused.value.trailing_metadata())


def test_unary_and_streamed_calls_have_their_records(served) -> None:
    stub, folder = served
    reply = stub.Infer(pb.InferRequest(prompt="Hello", user="erin", sampling=pb.SamplingParams(max_tokens=3)))
    record = _record(folder, reply.id)
    assert record["status"] == "ok" and record["route"] == "grpc /mcp.v1.InferenceService/Infer"
    assert record["subject"] == AuditKeys.from_file(folder / "audit.key").pseudonym("default", "erin")
    assert record["completion_tokens"] == reply.usage.completion_tokens
    chunks = list(stub.InferStream(pb.InferRequest(prompt="Hello", sampling=pb.SamplingParams(max_tokens=3)),
                                   metadata=(("traceparent", f"00-{TRACE_ID}-b7ad6b7169203331-01"),)))
    streamed = _record(folder, chunks[0].id)
    assert streamed["route"] == "grpc /mcp.v1.InferenceService/InferStream" and streamed["trace_id"] == TRACE_ID


def test_an_output_rule_stops_the_stream_with_content_filter(served) -> None:
    stub, folder = served
    request = pb.InferRequest(prompt="Tell me a story", sampling=pb.SamplingParams(max_tokens=40))
    chunks = list(stub.InferStream(request, metadata=(("x-tenant-id", "mute"),)))
    assert "".join(c.text for c in chunks) == ""
    assert chunks[-1].finish_reason == pb.FINISH_REASON_CONTENT_FILTER
    assert _record(folder, chunks[0].id)["status"] == "stopped"
    whole = stub.Infer(request, metadata=(("x-tenant-id", "mute"),))
    assert whole.text == "" and whole.finish_reason == pb.FINISH_REASON_CONTENT_FILTER
