"""What ``libmcp`` (the C API, include/mcp/mcp.h) calls inside the interpreter it embeds.

The C side holds only plain values and opaque references to the objects made here; every
feature is the Python SDK's own (``Session``, ``Model``, ``TextStream``), so C and Go get the
same engine loop, batching and errors. Functions here take and return builtins only (str, int,
float, tuple, dict), which keeps the C side to a few conversions.

Waiting happens inside Python calls that block on a queue (``TextStream``), which release the
GIL: many C threads waiting at once leave the engine loop free to batch their requests.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.base import errors
from mcp.base.result import InferResult
from mcp.runtime.model import Model
from mcp.runtime.session import Session
from mcp.runtime.stream import TextStream

# The C API's status codes (enum mcp_status in include/mcp/mcp.h), most specific class first:
# the first class an error is an instance of gives its code. Keep the two lists in step.
class ArgumentError(errors.InvalidRequestError):
    """A C argument is wrong (a NULL pointer, options not initialised): MCP_ERR_ARGUMENT."""


STATUS_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (ArgumentError, 17),
    (errors.ContextLengthError, 7),
    (errors.UnsupportedModelError, 5),
    (errors.ConfigError, 2),
    (errors.ModelNotFoundError, 3),
    (errors.ModelFormatError, 4),
    (errors.InvalidRequestError, 6),
    (errors.DownloadError, 8),
    (errors.CapacityError, 9),
    (errors.PolicyDenied, 10),
    (errors.EngineError, 11),
    (errors.ModelSignatureError, 12),
    (errors.RequestCancelled, 13),
    (errors.WorkerUnavailableError, 14),
    (errors.MCPError, 1),
)
INTERNAL = 16  # not an MCPError: a bug on our side, reported with its type


def describe_error(error: BaseException) -> tuple[int, str]:
    """``(status code, message)`` for an exception a call raised."""
    if isinstance(error, UnicodeError):
        return 6, f"a string argument is not valid UTF-8: {error}"
    for cls, code in STATUS_CODES:
        if isinstance(error, cls):
            return code, str(error) or cls.__name__
    return INTERNAL, f"internal error ({type(error).__name__}): {error}"


class CancelToken:
    """A cancel signal from C (``mcp_cancel_fire``), shared by the calls it was passed to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[TextStream] = []
        self.cancelled = False

    def attach(self, stream: TextStream) -> None:
        with self._lock:
            if not self.cancelled:
                self._streams.append(stream)
                return
        stream.cancel()

    def detach(self, stream: TextStream) -> None:
        with self._lock:
            if stream in self._streams:
                self._streams.remove(stream)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            streams, self._streams = self._streams, []
        for stream in streams:
            stream.cancel()


def open_session(config_path: str | None) -> Session:
    return Session.from_config(config_path) if config_path else Session()


def load_model(session: Session, model: str) -> Model:
    return session.load_model(model)


def unload_model(session: Session, model: Model) -> None:
    """Unload ``model``; one the session already dropped (closed) is unloaded already."""
    if session.models.get(model.name) is model:
        session.unload_model(model.name)
    else:
        model.unload()


def start_stream(model: Model, prompt: str | None, messages: Sequence[Mapping[str, Any]] | None,
                 options: dict[str, Any], cancel: CancelToken | None) -> TextStream:
    """Queue a request (a prompt, or a conversation when ``messages`` is given)."""
    if messages is not None:
        stream = model.chat_stream(messages, **options)
    else:
        stream = model.stream(prompt, **options)
    if cancel is not None:
        cancel.attach(stream)
    return stream


def next_delta(stream: TextStream) -> str | None:
    """The next text delta, or None at the end (then ``finish`` gives the result)."""
    return next(stream, None)


def run_to_end(stream: TextStream) -> None:
    """Wait for the request's end without handing out deltas (``mcp_infer``)."""
    for _ in stream.steps():
        pass


def finish(stream: TextStream, cancel: CancelToken | None) -> tuple:
    """The flat form of the stream's InferResult that the C result struct copies."""
    if cancel is not None:
        cancel.detach(stream)
    result = stream.result
    if result is None:  # closed early: its text was already handed out
        raise errors.RequestCancelled("the stream was closed before its end")
    return flat_result(result)


def flat_result(result: InferResult) -> tuple:
    timings = result.timings
    queue_s = timings.queue_s if timings.queue_s is not None else -1.0
    return (result.text, list(result.token_ids), result.finish_reason,
            result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.cached_tokens,
            timings.ttft_s, timings.tpot_s, timings.total_s, queue_s)


def cancel_stream(stream: TextStream) -> None:
    stream.cancel()


def model_stats(model: Model) -> tuple[int, ...]:
    """The engine loop's counters (``mcp_stats``): steps, most sequences in a step, ..."""
    stats = model.loop.stats()
    return (stats.num_steps, stats.max_sequences_in_step, stats.num_finished, stats.num_running,
            stats.num_waiting, stats.num_preemptions)
