"""The HTTP target: any OpenAI-compatible server, ``/v1/completions`` or ``/v1/chat/completions``.

Each request is one streamed POST (``stream: true`` with ``stream_options.include_usage``,
so the last event carries the token counts). The SLO class and tenant go as the headers
``x-sla-class`` and ``x-tenant`` when ``send_slo_options`` is on. HTTP 429 is a refusal
(``CapacityError`` with the ``Retry-After`` hint); any other status >= 400 is an error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from mcp.base.errors import CapacityError, InvalidRequestError, MCPError
from mcp.ops.loadgen.sse import iter_sse_data
from mcp.ops.loadgen.workload import RequestSpec

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


class HTTPStream:
    """One streamed response; ``close`` may come from another thread."""

    def __init__(self, response: httpx.Response, chat: bool) -> None:
        self._response = response
        self._chat = chat
        self._closed = threading.Event()
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.finish_reason: str | None = None

    def __iter__(self) -> Iterator[str]:
        try:
            for data in iter_sse_data(self._response.iter_lines()):
                if data.strip() == "[DONE]" or self._closed.is_set():
                    break
                text = self._read_event(json.loads(data))
                if text:
                    yield text
        finally:
            self._response.close()

    def close(self) -> None:
        self._closed.set()
        self._response.close()

    def _read_event(self, event: dict[str, Any]) -> str:
        if "error" in event:
            raise MCPError(f"the server sent an error event: {event['error']}")
        usage = event.get("usage")
        if usage:
            self.prompt_tokens = usage.get("prompt_tokens")
            self.completion_tokens = usage.get("completion_tokens")
        choices = event.get("choices") or []
        if not choices:
            return ""
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        if self._chat:
            return (choice.get("delta") or {}).get("content") or ""
        return choice.get("text") or ""


class OpenAIHTTPTarget:
    """Streams each request to ``base_url`` (``http://host:port``, with or without ``/v1``)."""

    name = "http"

    def __init__(self, base_url: str, model_name: str, *, endpoint: str = "completions",
                 send_slo_options: bool = True, temperature: float = 0.0, ignore_eos: bool = True,
                 api_key: str | None = None, read_timeout_s: float = 600.0,
                 extra_body: Mapping[str, Any] | None = None) -> None:
        if endpoint not in ENDPOINTS:
            raise InvalidRequestError(f"--endpoint {endpoint!r} is unknown; use {' or '.join(ENDPOINTS)}")
        if not base_url.startswith(("http://", "https://")):
            raise InvalidRequestError(f"--url {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model_name = model_name
        self.endpoint = endpoint
        self.send_slo_options = send_slo_options
        self.options = {"temperature": temperature, "ignore_eos": ignore_eos}
        self.extra_body = dict(extra_body or {})  # server-specific fields, sent as they are
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # no pool limit: a request waiting for a free connection would count as server time
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers,
            timeout=httpx.Timeout(10.0, read=read_timeout_s),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))

    def open(self, request: RequestSpec) -> HTTPStream:
        headers = {"x-sla-class": request.slo_class, "x-tenant": request.tenant} if self.send_slo_options else {}
        built = self._client.build_request("POST", ENDPOINTS[self.endpoint], json=self._body(request),
                                           headers=headers)
        response = self._client.send(built, stream=True)
        if response.status_code >= 400:
            _raise_for_status(response)
        return HTTPStream(response, chat=self.endpoint == "chat")

    def _body(self, request: RequestSpec) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model_name, "max_tokens": request.max_tokens, "stream": True,
                                "stream_options": {"include_usage": True}, **self.options, **self.extra_body}
        if not body["ignore_eos"]:
            del body["ignore_eos"]  # a plain OpenAI server does not know it
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": request.prompt}]
        else:
            body["prompt"] = request.prompt
        return body

    def close(self) -> None:
        self._client.close()

    def describe(self) -> dict:
        described = {"kind": self.name, "url": self.base_url + ENDPOINTS[self.endpoint], "model": self.model_name,
                     "send_slo_options": self.send_slo_options, **self.options}
        return {**described, "extra_body": self.extra_body} if self.extra_body else described


def _raise_for_status(response: httpx.Response) -> None:
    try:
        text = response.read().decode("utf-8", "replace")[:300]
    finally:
        response.close()
    where = f"{response.request.method} {response.request.url}"
    if response.status_code == 429:
        raise CapacityError(f"{where} refused with 429: {text}", _retry_after(response))
    raise MCPError(f"{where} answered {response.status_code}: {text}")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
