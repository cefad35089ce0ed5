"""The OpenAI-compatible API end to end: a real ``mcp2026 serve`` process with the real default
model, called with the official ``openai`` client (and raw httpx for what the client cannot send)."""

from __future__ import annotations

import json
import re
import time

import httpx
import openai
import pytest

pytestmark = pytest.mark.slow
CHAT = [{"role": "user", "content": "Name three colors."}]
GREEDY = {"temperature": 0.0}


@pytest.fixture(scope="module")
def server(start_server, smollm2_auto_mcp):
    return start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}],
                    "limits": {"max_body_bytes": 200_000, "max_n": 4}},
    })


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def _metric(server, name: str, **labels: str) -> float:
    text = httpx.get(server.url + "/metrics").text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_chat_plain(client):
    reply = client.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=12, **GREEDY)
    assert reply.object == "chat.completion" and reply.model == "smollm2:1"
    choice = reply.choices[0]
    assert choice.message.role == "assistant" and choice.message.content.strip()
    assert choice.finish_reason in ("stop", "length")
    assert reply.usage.completion_tokens <= 12 and reply.usage.prompt_tokens > 5
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_chat_stream_matches_plain_and_carries_usage(client):
    plain = client.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=16, **GREEDY)
    chunks = list(client.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=16, stream=True,
                                                 stream_options={"include_usage": True}, **GREEDY))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == plain.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_completions_stop_seed_n_and_logprobs(client):
    text = client.completions.create(model="smollm2", prompt="1, 2, 3, 4,", max_tokens=20, stop=[" 7"], **GREEDY)
    assert text.choices[0].finish_reason == "stop" and " 7" not in text.choices[0].text
    assert text.choices[0].text.startswith(" 5, 6")
    seeded = dict(model="smollm2", prompt="Once upon a time", max_tokens=8, temperature=1.0, seed=11, n=2)
    first, again = client.completions.create(**seeded), client.completions.create(**seeded)
    assert [c.text for c in first.choices] == [c.text for c in again.choices]
    assert [c.index for c in first.choices] == [0, 1] and first.usage.completion_tokens == 16
    probs = client.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=4, logprobs=True,
                                           top_logprobs=3, **GREEDY)
    content = probs.choices[0].logprobs.content
    assert len(content) == 4 and all(len(t.top_logprobs) == 3 for t in content)
    assert all(t.logprob <= 0 and t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob for t in content)
    assert content[0].token == content[0].top_logprobs[0].token  # greedy picks the top token
    assert "".join(t.token for t in content) == probs.choices[0].message.content


def test_models_list_and_default_model(client):
    ids = {m.id for m in client.models.list()}
    assert ids == {"smollm2", "smollm2:1"}
    reply = client.completions.create(model="", prompt="Hello", max_tokens=2, **GREEDY)
    assert reply.model == "smollm2:1"


@pytest.mark.parametrize("body, status, text", [
    ({"model": "nope", "messages": CHAT}, 404, "does not exist"),
    ({"model": "smollm2", "messages": CHAT, "max_tokens": -1}, 400, "max_tokens"),
    ({"model": "smollm2", "messages": CHAT, "temperature": "hot"}, 400, "temperature"),
    ({"model": "smollm2", "messages": "hello"}, 400, "messages"),
    ({"model": "smollm2", "messages": CHAT, "n": 9}, 400, "at most 4"),
    ({"model": "smollm2", "messages": CHAT, "frobnicate": 1}, 400, "unknown field 'frobnicate'"),
    ({"model": "smollm2", "messages": [{"role": "user", "content": "word " * 9000}]}, 400, "context holds"),
])
def test_bad_requests_are_openai_errors_and_the_server_goes_on(server, client, body, status, text):
    response = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert text in error["message"] and set(error) == {"message", "type", "param", "code"}
    if "context holds" in text:
        assert error["code"] == "context_length_exceeded"
    assert client.completions.create(model="smollm2", prompt="Hi", max_tokens=1).usage.completion_tokens == 1


def test_the_openai_client_raises_typed_errors(client):
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="missing", messages=CHAT)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="smollm2", messages=CHAT, top_logprobs=50, logprobs=True)
    assert caught.value.body["param"] == "top_logprobs"


@pytest.mark.parametrize("raw, status, text", [
    (b'{"model": "smollm2", "messages": [', 400, "not valid JSON"),
    (b"", 400, "missing"),
    (b"x" * 300_000, 413, "over 200000 bytes"),
])
def test_malformed_bodies(server, raw, status, text):
    response = httpx.post(server.url + "/v1/chat/completions", content=raw,
                          headers={"content-type": "application/json"})
    assert response.status_code == status and text in response.json()["error"]["message"]
    assert httpx.get(server.url + "/ready").status_code == 200


def test_sla_class_header_reaches_the_engine(server, client):
    before = _metric(server, "mcp_request_success_total", slo_class="critical")
    client.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=2,
                                   extra_headers={"x-sla-class": "critical"})
    assert _metric(server, "mcp_request_success_total", slo_class="critical") == before + 1
    with pytest.raises(openai.BadRequestError, match="unknown SLO class"):
        client.chat.completions.create(model="smollm2", messages=CHAT, extra_headers={"x-sla-class": "gold"})


def test_client_disconnect_cancels_the_sequence(server):
    before = _metric(server, "mcp_request_success_total", finished_reason="cancelled")
    body = {"model": "smollm2", "prompt": "Tell a long story.", "max_tokens": 400, "ignore_eos": True,
            "stream": True}
    with httpx.stream("POST", server.url + "/v1/completions", json=body, timeout=60) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("data:"))
    deadline = time.monotonic() + 20
    while _metric(server, "mcp_request_success_total", finished_reason="cancelled") == before:
        assert time.monotonic() < deadline, "the abandoned stream was not cancelled"
        time.sleep(0.1)
    assert _metric(server, "mcp_num_requests_running") == 0


def test_metrics_and_the_probe(server, client):
    client.completions.create(model="smollm2", prompt="Hello", max_tokens=3, **GREEDY)
    text = httpx.get(server.url + "/metrics").text
    for name in ("mcp_num_requests_running", "mcp_num_requests_waiting", "mcp_kv_cache_usage_perc",
                 "mcp_prompt_tokens_total", "mcp_generation_tokens_total", "mcp_request_success_total",
                 "mcp_time_to_first_token_seconds_bucket", "mcp_inter_token_latency_seconds_bucket",
                 "mcp_e2e_request_latency_seconds_bucket", "mcp_request_queue_time_seconds_bucket",
                 "mcp_num_preemptions_total", "mcp_slo_attainment", "mcp_model_load_to_ready_seconds"):
        assert re.search(rf'^{name}{{[^}}]*model="smollm2"', text, re.M), name
    ours = "\n".join(line for line in text.splitlines() if line.startswith("mcp_"))  # vllm: ones have vLLM's
    labels = set(re.findall(r'(\w+)="', ours))
    # "latency": the drift gauges' label, present once the drift monitor has ticked (every 30 s)
    assert labels <= {"model", "version", "slo_class", "finished_reason", "le", "latency"}
    probe = httpx.get(server.url + "/health", params={"metric": "latency_p95", "service": "mcp2026",
                                                      "model": "smollm2", "window": "5m"}).json()
    assert probe["healthy"] is True and probe["samples"] > 0 and 0 < probe["value"] < 60
    rate = httpx.get(server.url + "/health", params={"metric": "error_rate", "service": "mcp2026"}).json()
    assert rate["value"] == 0.0
    assert httpx.get(server.url + "/health", params={"metric": "bogus"}).status_code == 400
    assert httpx.get(server.url + "/health", params={"metric": "error_rate", "service": "x"}).status_code == 404
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}


def test_openapi_document_lists_the_routes(server):
    document = httpx.get(server.url + "/openapi.json").json()
    assert {"/v1/chat/completions", "/v1/completions", "/v1/models", "/admin/models", "/health", "/ready",
            "/metrics"} <= set(document["paths"])
    schema = document["components"]["schemas"]["ChatCompletionRequest"]
    assert {"messages", "max_completion_tokens", "stream_options", "top_logprobs"} <= set(schema["properties"])
    json.dumps(document)
