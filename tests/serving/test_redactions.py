"""What governance redacted, as a real server reports it: the ``x-mcp-redactions`` header and the
``mcp_redactions`` field on chat completions, completions, the Responses API and the Messages API,
whole and streamed, read through openai-python and anthropic where they carry it; gRPC's trailing
metadata on Infer and InferStream over a real channel.

The server runs the shipped bundle (the output rule redacts personal data: SmolLM2 repeats the
e-mail address of a few-shot prompt) plus an input rule that redacts e-mail addresses from the
prompts of tenant ``careful`` (``x-tenant-id`` on this open server)."""

from __future__ import annotations

import json
import shutil
import socket

import anthropic
import grpc
import httpx
import openai
import pytest

from mcp.governance.policy.bundle import SHIPPED
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc

pytestmark = pytest.mark.slow
FEW_SHOT = "Contact: jane.doe@example.com\nContact: jane.doe@example.com\nContact:"  # the answer repeats it
ASKS = "Write to jane.doe@example.com or to john@example.org. Say hello."
CAREFUL = {"x-tenant-id": "careful"}
REDACT_CAREFUL_INPUT = """package mcp.input

import rego.v1

redact contains {"rule": "input.careful_email", "reason": "tenant careful sends no addresses", "kinds": ["email"]} if {
	input.tenant.name == "careful"
	some f in input.findings
	f.kind == "email"
}
"""
PROMPT_ONLY = {"count": 2, "input": {"email": 2}, "output": {}}


@pytest.fixture(scope="module")
def server(start_server, smollm2_auto_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("redactions")
    shutil.copytree(SHIPPED, folder / "policies")
    (folder / "policies" / "careful.rego").write_text(REDACT_CAREFUL_INPUT)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        grpc_port = sock.getsockname()[1]
    server = start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 256 * 16 * 46080},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}],
                    "grpc": {"enabled": True, "port": grpc_port},
                    "governance": {"policy_bundle": str(folder / "policies"), "stream_window_chars": 32,
                                   "audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    server.grpc_address = f"127.0.0.1:{grpc_port}"
    return server


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.grpc_address) as channel:
        yield pb_grpc.InferenceServiceStub(channel)


def _openai(server, **headers) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, default_headers=headers)


def _events(response: httpx.Response) -> list[dict]:
    """The JSON of every ``data:`` line of a server-sent stream, [DONE] left out."""
    return [json.loads(line[6:]) for line in response.iter_lines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def _stream(server, path: str, body: dict, headers: dict | None = None) -> tuple[httpx.Response, list[dict]]:
    with httpx.stream("POST", server.url + path, json={**body, "stream": True}, headers=headers, timeout=120) as r:
        return r, _events(r)


def test_chat_reports_the_prompts_redactions_in_header_and_field(server) -> None:
    raw = _openai(server, **CAREFUL).chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": ASKS}], max_tokens=8, temperature=0)
    completion = raw.parse()
    assert raw.headers["x-mcp-redactions"] == "input.email=2"
    assert completion.model_extra["mcp_redactions"] == PROMPT_ONLY  # openai-python keeps the extra field


def test_a_streamed_chat_has_the_header_and_the_whole_count_on_its_last_chunk(server) -> None:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": ASKS}], "max_tokens": 6,
            "temperature": 0, "stream_options": {"include_usage": True}}
    response, chunks = _stream(server, "/v1/chat/completions", body, CAREFUL)
    assert response.headers["x-mcp-redactions"] == "input.email=2"
    assert chunks[-1]["usage"] and chunks[-1]["mcp_redactions"] == PROMPT_ONLY  # the usage chunk is the last
    assert not any("mcp_redactions" in chunk for chunk in chunks[:-1])

    stream = _openai(server, **CAREFUL).chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": ASKS}], max_tokens=6, temperature=0, stream=True)
    last = list(stream)[-1]  # without usage: the chunk that ends the choice
    assert last.choices[0].finish_reason and last.model_extra["mcp_redactions"] == PROMPT_ONLY


def test_an_answers_redactions_are_counted_whole_and_streamed(server) -> None:
    raw = _openai(server).completions.with_raw_response.create(model="smollm2", prompt=FEW_SHOT, max_tokens=12,
                                                               temperature=0)
    completion = raw.parse()
    num_redacted = completion.choices[0].text.count("[REDACTED:email]")
    assert num_redacted >= 1 and "jane" not in completion.choices[0].text
    assert raw.headers["x-mcp-redactions"] == f"output.email={num_redacted}"
    assert completion.model_extra["mcp_redactions"] == {"count": num_redacted, "input": {},
                                                        "output": {"email": num_redacted}}

    response, chunks = _stream(server, "/v1/completions", {"model": "smollm2", "prompt": FEW_SHOT, "max_tokens": 12,
                                                           "temperature": 0})
    assert "x-mcp-redactions" not in response.headers  # nothing in the prompt; the answer was still to come
    assert "".join(c["choices"][0]["text"] for c in chunks).count("[REDACTED:email]") == num_redacted
    assert chunks[-1]["mcp_redactions"]["output"] == {"email": num_redacted}


def test_nothing_redacted_sends_no_header_and_no_field(server) -> None:
    response = httpx.post(server.url + "/v1/chat/completions", headers=CAREFUL, timeout=120, json={
        "model": "smollm2", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 4})
    assert response.status_code == 200 and "x-mcp-redactions" not in response.headers
    assert "mcp_redactions" not in response.json()
    _, chunks = _stream(server, "/v1/chat/completions", {"model": "smollm2", "max_tokens": 4,
                                                         "messages": [{"role": "user", "content": "Say hello."}]})
    assert not any("mcp_redactions" in chunk for chunk in chunks)


def test_the_responses_api_reports_them_whole_and_in_its_last_event(server) -> None:
    raw = _openai(server, **CAREFUL).responses.with_raw_response.create(model="smollm2", input=ASKS,
                                                                        max_output_tokens=8, temperature=0)
    assert raw.headers["x-mcp-redactions"] == "input.email=2"
    assert raw.parse().model_extra["mcp_redactions"] == PROMPT_ONLY

    response, events = _stream(server, "/v1/responses", {"model": "smollm2", "input": ASKS,
                                                        "max_output_tokens": 8}, CAREFUL)
    assert response.headers["x-mcp-redactions"] == "input.email=2"
    assert events[-1]["type"] in ("response.completed", "response.incomplete")
    assert events[-1]["response"]["mcp_redactions"] == PROMPT_ONLY
    assert not any("mcp_redactions" in event.get("response", {}) for event in events[:-1])


def test_the_messages_api_reports_them_whole_and_on_message_delta(server) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0, default_headers=CAREFUL)
    raw = client.messages.with_raw_response.create(model="smollm2", max_tokens=8,
                                                   messages=[{"role": "user", "content": ASKS}])
    assert raw.headers["x-mcp-redactions"] == "input.email=2"
    assert raw.parse().model_extra["mcp_redactions"] == PROMPT_ONLY  # anthropic keeps the extra field too

    response, events = _stream(server, "/v1/messages", {"model": "smollm2", "max_tokens": 8,
                                                        "messages": [{"role": "user", "content": ASKS}]}, CAREFUL)
    assert response.headers["x-mcp-redactions"] == "input.email=2"
    (delta,) = [event for event in events if event["type"] == "message_delta"]
    assert delta["mcp_redactions"] == PROMPT_ONLY and events[-1]["type"] == "message_stop"


def test_grpc_reports_them_in_trailing_metadata(stub) -> None:
    chat = pb.InferRequest(chat=pb.Conversation(messages=[pb.ChatMessage(role="user", content=ASKS)]),
                           sampling=pb.SamplingParams(max_tokens=6, temperature=0.0))
    _, call = stub.Infer.with_call(chat, metadata=tuple(CAREFUL.items()))
    assert dict(call.trailing_metadata())["x-mcp-redactions"] == "input.email=2"

    few_shot = pb.InferRequest(prompt=FEW_SHOT, sampling=pb.SamplingParams(max_tokens=12, temperature=0.0))
    stream = stub.InferStream(few_shot)
    text = "".join(chunk.text for chunk in stream)
    num_redacted = text.count("[REDACTED:email]")
    assert num_redacted >= 1 and "jane" not in text
    assert dict(stream.trailing_metadata())["x-mcp-redactions"] == f"output.email={num_redacted}"

    _, call = stub.Infer.with_call(pb.InferRequest(prompt="Say hello.", sampling=pb.SamplingParams(max_tokens=4)))
    assert "x-mcp-redactions" not in dict(call.trailing_metadata())
