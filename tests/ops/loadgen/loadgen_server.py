"""A real OpenAI-compatible SSE server over the real model, on 127.0.0.1 (test_http_target, test_bench_serve_cli).

The smallest honest one: stdlib ``http.server``, one thread per request, ``model.stream`` for
the text, two deltas per SSE event (as servers that batch their writes do, so chunks and
tokens differ), a usage event when asked, and 429 with ``Retry-After`` when all its slots are
busy.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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


def start_server(model, num_slots: int = 8) -> CompletionServer:
    """A server answering on an ephemeral port in a daemon thread; ``shutdown()`` it when done."""
    server = CompletionServer(model, num_slots)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextmanager
def serving(model_path: Path, num_slots: int = 8):
    """A session with the model loaded and a server over it, both closed at the end."""
    with Session() as session:
        server = start_server(session.load_model(model_path), num_slots)
        try:
            yield server
        finally:
            server.shutdown()
            server.server_close()
