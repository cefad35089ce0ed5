"""The in-process target: a loaded ``Model``, each request one ``model.stream(...)`` call.

``send_slo_options`` passes each request's ``slo_class`` and ``tenant`` to the SDK; leave it
off for an SDK without SLO classes (the requests are still scored by their class). After a
stream ends, its ``.result`` (when the SDK's stream has one) gives the exact token counts;
otherwise the number of deltas stands in for the completion tokens.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.workload import RequestSpec


class SDKStream:
    """One ``model.stream`` call. ``close`` may come from another thread."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._closed = threading.Event()
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.finish_reason: str | None = None

    def __iter__(self) -> Iterator[str]:
        for delta in self._stream:
            if self._closed.is_set():
                break
            yield delta
        if self._closed.is_set():
            self._stop()
            return
        self._read_result()

    def close(self) -> None:
        self._closed.set()
        cancel = getattr(self._stream, "cancel", None)
        if cancel is not None:  # the engine loop's TextStream: safe from any thread
            cancel()

    def _stop(self) -> None:
        close = getattr(self._stream, "close", None)  # a plain generator: close it in its own thread
        if close is not None and getattr(self._stream, "cancel", None) is None:
            close()

    def _read_result(self) -> None:
        result = getattr(self._stream, "result", None)
        if result is None:
            return
        self.prompt_tokens = result.usage.prompt_tokens
        self.completion_tokens = result.usage.completion_tokens
        self.finish_reason = result.finish_reason


class InProcessTarget:
    """Requests go to ``model.stream`` in the calling thread (the runner gives each its own)."""

    name = "in-process"

    def __init__(self, model: Any, *, send_slo_options: bool = True, temperature: float = 0.0,
                 ignore_eos: bool = True, raw: bool = False, policy: str | None = None,
                 slo_table: SLOTable | None = None) -> None:
        self.model = model
        self.slo_table = slo_table  # the targets the engine schedules by, when it has them
        self.send_slo_options = send_slo_options
        self.options = {"temperature": temperature, "ignore_eos": ignore_eos, "raw": raw}
        self.policy = policy

    def open(self, request: RequestSpec) -> SDKStream:
        options: dict[str, Any] = {**self.options, "max_tokens": request.max_tokens}
        if self.send_slo_options:
            options.update(slo_class=request.slo_class, tenant=request.tenant)
        return SDKStream(self.model.stream(request.prompt, **options))

    def describe(self) -> dict:
        return {"kind": self.name, "model": self.model.name, "path": str(self.model.path),
                "backend": self.model.backend, "precision": self.model.precision, "policy": self.policy,
                "send_slo_options": self.send_slo_options, **self.options}
