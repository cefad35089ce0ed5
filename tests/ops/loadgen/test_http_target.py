"""The HTTP target against a real OpenAI-compatible SSE server on 127.0.0.1 over the real model.

The server below is the smallest honest one: stdlib ``http.server``, one thread per request,
``model.stream`` for the text, two deltas per SSE event (as servers that batch their writes
do, so chunks and tokens differ), a usage event when asked, and 429 with ``Retry-After``
when all its slots are busy.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcp.ops.loadgen.http_target import OpenAIHTTPTarget
from mcp.ops.loadgen.record import ERROR, OK, REFUSED, TIMEOUT
from mcp.ops.loadgen.runner import run_workload
from mcp.ops.loadgen.workload import RequestSpec
from mcp.runtime.session import Session


class CompletionServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model, num_slots: int) -> None:
        super().__init__(("127.0.0.1", 0), CompletionHandler)
        self.model = model
        self.slots = threading.Semaphore(num_slots)
        self.seen: list[dict] = []  # per request: path, headers of interest, body, deltas sent
        self.active = 0  # requests generating now
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class CompletionHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: no chunked encoding needed

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        seen = {"path": self.path, "class": self.headers.get("x-sla-class"), "tenant": self.headers.get("x-tenant"),
                "body": body, "deltas": 0}
        self.server.seen.append(seen)
        if body.get("model") == "broken":
            return self._json(500, {"error": {"message": "model broken is not healthy"}})
        if not self.server.slots.acquire(blocking=False):
            return self._json(429, {"error": {"message": "all slots busy"}}, {"Retry-After": "1.5"})
        with self.server.lock:
            self.server.active += 1
        try:
            self._stream(body, seen)
        except (BrokenPipeError, ConnectionResetError):
            seen["disconnected"] = True
        finally:
            with self.server.lock:
                self.server.active -= 1
            self.server.slots.release()

    def _stream(self, body: dict, seen: dict) -> None:
        chat = self.path == "/v1/chat/completions"
        options = {"max_tokens": body["max_tokens"], "temperature": body["temperature"],
                   "ignore_eos": body.get("ignore_eos", False)}
        model = self.server.model
        deltas = model.chat_stream(body["messages"], **options) if chat else model.stream(body["prompt"], raw=True, **options)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pending = []
        for delta in deltas:
            seen["deltas"] += 1
            pending.append(delta)
            if len(pending) == 2:
                self._event(self._choice("".join(pending), None, chat))
                pending = []
        self._event(self._choice("".join(pending), "length", chat))
        if body.get("stream_options", {}).get("include_usage"):
            self._event({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": seen["deltas"]}})
        self.wfile.write(b"data: [DONE]\n\n")

    @staticmethod
    def _choice(text: str, finish_reason: str | None, chat: bool) -> dict:
        key = {"delta": {"content": text}} if chat else {"text": text}
        return {"object": "chat.completion.chunk" if chat else "text_completion",
                "choices": [{"index": 0, "finish_reason": finish_reason, **key}]}

    def _event(self, event: dict) -> None:
        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()

    def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def model(smollm2_auto_mcp):
    with Session() as session:
        yield session.load_model(smollm2_auto_mcp)


@pytest.fixture
def serve(model):
    servers = []

    def start(num_slots: int = 8) -> CompletionServer:
        server = CompletionServer(model, num_slots)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

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


def test_chat_endpoint_without_slo_headers(serve, model):
    server = serve()
    target = OpenAIHTTPTarget(server.url, "smollm2", endpoint="chat", send_slo_options=False, ignore_eos=False)
    (record,) = run_workload(target, requests(0.0, max_tokens=8)).records
    target.close()
    (seen,) = server.seen
    assert record.status == OK, record.error
    assert (seen["path"], seen["class"], seen["tenant"]) == ("/v1/chat/completions", None, None)
    assert seen["body"]["messages"] == [{"role": "user", "content": "The capital of France is"}]
    assert "ignore_eos" not in seen["body"]
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
