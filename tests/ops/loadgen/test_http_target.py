"""The HTTP target against a real OpenAI-compatible SSE server on 127.0.0.1 over the real model
(``loadgen_server.py``)."""

from __future__ import annotations

import time

import pytest

from mcp.ops.loadgen.http_target import OpenAIHTTPTarget
from mcp.ops.loadgen.record import ERROR, OK, REFUSED, TIMEOUT
from mcp.ops.loadgen.runner import run_workload
from mcp.ops.loadgen.workload import RequestSpec
from mcp.runtime.session import Session

from loadgen_server import CompletionServer, start_server


@pytest.fixture(scope="module")
def model(smollm2_auto_mcp):
    with Session() as session:
        yield session.load_model(smollm2_auto_mcp)


@pytest.fixture
def serve(model):
    servers = []

    def start(num_slots: int = 8) -> CompletionServer:
        servers.append(start_server(model, num_slots))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def requests(*arrivals: float, max_tokens: int = 6) -> list[RequestSpec]:
    classes, tenants = ("critical", "high", "low"), ("acme", "globex")
    return [RequestSpec(i, t, "The capital of France is", 0, max_tokens, classes[i % 3], tenants[i % 2])
            for i, t in enumerate(arrivals)]


def test_completions_stream_with_usage_class_and_tenant_headers(serve):
    server = serve()
    target = OpenAIHTTPTarget(server.url + "/v1", "smollm2")
    result = run_workload(target, requests(0.0, 0.05, 0.1))
    target.close()
    assert [r.status for r in result.records] == [OK, OK, OK], [r.error for r in result.records]
    by_class = {s["class"]: s for s in server.seen}
    for record in result.records:
        seen = by_class[record.slo_class]
        assert (seen["path"], seen["tenant"]) == ("/v1/completions", record.tenant)
        assert seen["body"] == {"model": "smollm2", "prompt": "The capital of France is", "max_tokens": 6,
                                "stream": True, "stream_options": {"include_usage": True},
                                "temperature": 0.0, "ignore_eos": True}
        assert record.output_tokens == seen["deltas"]  # from the usage event, not from counting chunks
        assert len(record.chunk_times_s) == (seen["deltas"] + 1) // 2
        assert (record.prompt_tokens, record.finish_reason) == (7, "length")


def test_busy_server_refuses_with_429_and_retry_after(serve):
    server = serve(num_slots=1)
    target = OpenAIHTTPTarget(server.url, "smollm2")
    result = run_workload(target, requests(0.0, 0.0, 0.0, max_tokens=24))
    target.close()
    statuses = sorted(r.status for r in result.records)
    assert statuses == [OK, REFUSED, REFUSED]
    for record in result.records:
        if record.status == REFUSED:
            assert record.retry_after_s == 1.5
            assert "refused with 429" in record.error and "all slots busy" in record.error


def test_chat_endpoint_without_slo_headers_with_extra_fields(serve):
    server = serve()
    target = OpenAIHTTPTarget(server.url, "smollm2", endpoint="chat", send_slo_options=False, ignore_eos=False,
                              extra_body={"logit_bias": {"2": -100.0}})
    (record,) = run_workload(target, requests(0.0, max_tokens=8)).records
    target.close()
    (seen,) = server.seen
    assert record.status == OK, record.error
    assert (seen["path"], seen["class"], seen["tenant"]) == ("/v1/chat/completions", None, None)
    assert seen["body"]["messages"] == [{"role": "user", "content": "The capital of France is"}]
    assert "ignore_eos" not in seen["body"] and seen["body"]["logit_bias"] == {"2": -100.0}
    assert target.describe()["extra_body"] == {"logit_bias": {"2": -100.0}}
    assert record.output_tokens == seen["deltas"] >= 1


def test_server_errors_are_recorded_with_the_status(serve):
    server = serve()
    target = OpenAIHTTPTarget(server.url, "broken")
    (record,) = run_workload(target, requests(0.0)).records
    target.close()
    assert record.status == ERROR
    assert "answered 500" in record.error and "model broken is not healthy" in record.error


def test_late_requests_are_closed_and_the_server_stops_generating(serve):
    server = serve()
    target = OpenAIHTTPTarget(server.url, "smollm2")
    (record,) = run_workload(target, requests(0.0, max_tokens=400), drain_timeout_s=0.5).records
    target.close()
    assert record.status == TIMEOUT and len(record.chunk_times_s) < 200
    deadline = time.monotonic() + 10
    while server.active and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.active == 0 and server.seen[0]["deltas"] < 400
