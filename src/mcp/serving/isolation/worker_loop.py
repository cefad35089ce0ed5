"""``WorkerLoop``: what a ``Model`` submits to when its engine runs in a worker process.

It offers the ``EngineLoop`` calls a Model uses (``submit``, ``cancel``, ``stats``, ``close``,
``config``, ``max_context``) and hands out the same ``RequestHandle``s, fed from the worker's
``steps`` frames; only token ids go down and token steps come up. The hooks a server adds
(metrics) fire here, on the channel's reader thread, before the submitter sees each event, as
they do on an EngineLoop's thread. When the worker dies, every request it held ends at once
with a ``WorkerUnavailableError`` (HTTP 503, gRPC UNAVAILABLE) and the supervisor restarts it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.base.errors import InvalidRequestError, MCPError, RequestCancelled, WorkerUnavailableError
from mcp.engine.handle import RequestHandle, RequestOptions, RequestOutcome
from mcp.engine.hooks import GenerationCompleted, HookRegistry, RequestTimings, SequenceStarted, TokenGenerated
from mcp.engine.live import LoopStats
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.serving.isolation import codec
from mcp.serving.isolation.process import WorkerProcess
from mcp.serving.isolation.spares import SpareWorkers
from mcp.serving.isolation.spec import WorkerSpec
from mcp.serving.isolation.supervisor import WorkerSupervisor
from mcp.serving.isolation.worker_embed import WorkerEmbedding

_CALL_TIMEOUT_S = 30.0  # a submit is a few ms of admission; past this the worker is stuck


@dataclass(eq=False)
class _Request:
    handle: RequestHandle
    process: WorkerProcess
    options: RequestOptions
    arrival_s: float
    num_steps: int = 0
    first_token_s: float | None = None
    started: bool = False  # on_sequence_start fired

    @property
    def slo_class(self) -> str:
        return self.options.slo_class.name.lower()


class WorkerLoop:
    """A model's requests, run by its supervised worker process. Thread-safe."""

    def __init__(self, spec: WorkerSpec, config: LoopConfig, hooks: HookRegistry,
                 spares: SpareWorkers | None = None) -> None:
        self.config, self.hooks = config, hooks
        self._requests: dict[int, _Request] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._closed = False
        self.supervisor = WorkerSupervisor(spec, self._on_steps, self._on_crash, spares)
        self.max_context = int(self.supervisor.first_ready["max_context"])

    # -- the submitter's side -------------------------------------------------------------
    def submit(self, prompt_ids: Sequence[int], params: SamplingParams,
               options: RequestOptions = RequestOptions()) -> RequestHandle:
        if isinstance(prompt_ids, (str, bytes)) or not isinstance(prompt_ids, Sequence):
            raise InvalidRequestError(f"prompt_ids must be a list of token ids, got {type(prompt_ids).__name__}")
        if self._closed:
            raise InvalidRequestError("this model's worker is stopped (the model was unloaded); load it again")
        handle = self._submit_once(prompt_ids, params, options, retry=True)
        assert handle is not None, "a submit without retry returns a handle or raises"
        return handle

    def _submit_once(self, prompt_ids: Sequence[int], params: SamplingParams, options: RequestOptions,
                     retry: bool = False) -> RequestHandle | None:
        """Submit to the running worker; one that died before it took the request (a crash
        not yet noticed) is retried once on its successor."""
        process = self.supervisor.running(self.supervisor.spec.limits.start_timeout_s)
        sid = next(self._ids)
        handle = RequestHandle(f"req-{sid}", len(prompt_ids), lambda _: self._cancel(sid))
        request = _Request(handle, process, options, time.monotonic())
        with self._lock:
            self._requests[sid] = request
        try:
            process.call("submit", _CALL_TIMEOUT_S, sid=sid, prompt_ids=list(prompt_ids),
                         request=codec.encode_request(params, options))
        except BaseException as error:
            with self._lock:
                self._requests.pop(sid, None)
            if retry and isinstance(error, WorkerUnavailableError) and not process.alive:
                return self._submit_once(prompt_ids, params, options)
            raise
        self._start(request, sid)
        return handle

    def embed(self, inputs_ids: Sequence[Sequence[int]], options: RequestOptions = RequestOptions()) -> WorkerEmbedding:
        """An embedding request for the worker's encoder (worker_embed.py); it runs on ``wait``."""
        if self._closed:
            raise InvalidRequestError("this model's worker is stopped (the model was unloaded); load it again")
        call = lambda op, timeout, **fields: self.supervisor.running(  # noqa: E731
            self.supervisor.spec.limits.start_timeout_s).call(op, timeout, **fields)
        return WorkerEmbedding(call, self.hooks, f"emb-{next(self._ids)}", inputs_ids, options, time.monotonic)

    def cancel(self, request_id: str) -> None:
        """End ``request_id`` (``req-N``) at the worker's next step. Never blocks."""
        _, _, number = request_id.partition("-")
        if number.isdigit():
            self._cancel(int(number))

    def stats(self) -> LoopStats:
        process = self.supervisor.process
        if process is None:
            raise WorkerUnavailableError(f"the worker of model {self.supervisor.spec.name} is not running", 1.0)
        return codec.decode_stats(process.call("stats", 5.0))

    def probe(self, host: str = "127.0.0.1", port: int = 9) -> dict[str, Any]:
        """The sandbox as the worker measures it from inside (see probe.py); ``host:port`` is
        what it tries to connect to."""
        process = self.supervisor.running(self.supervisor.spec.limits.start_timeout_s)
        return process.call("probe", 30.0, host=host, port=port)

    def close(self) -> None:
        """Stop the worker; requests still running end with RequestCancelled."""
        self._closed = True
        self.supervisor.stop()
        self._end_all(None, RequestCancelled("the model was unloaded while this request ran; load it again and retry"))

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the channel's reader thread ------------------------------------------------------
    def _on_steps(self, message: dict[str, Any]) -> None:
        now = float(message["time_s"])
        for sid, steps, outcome in message["items"]:
            with self._lock:
                request = self._requests.get(sid)
            if request is None:
                continue  # a request this loop no longer holds (ended by a crash)
            self._start(request, sid)
            for data in steps:
                self._token(request, codec.decode_step(data), now)
            if outcome is not None:
                self._finish(sid, request, codec.decode_outcome(outcome, request.handle.request_id))

    def _on_crash(self, process: WorkerProcess, reason: str) -> None:
        self._end_all(process, WorkerUnavailableError(
            f"the worker process of model {process.spec.name} {reason} while this request ran; it is being "
            "restarted: retry the request", self.supervisor.spec.limits.restart_backoff_s + 1.0))

    # -- events, in the order an EngineLoop gives them -------------------------------------
    def _start(self, request: _Request, sid: int) -> None:
        with self._lock:
            if request.started:
                return
            request.started = True
        options = request.options
        self.hooks.emit("on_sequence_start", SequenceStarted(
            request.handle.request_id, options.tenant, request.slo_class, request.handle.num_prompt_tokens,
            request.arrival_s))

    def _token(self, request: _Request, step: Any, now: float) -> None:
        if request.first_token_s is None:
            request.first_token_s = now
        if self.hooks.has("on_token_generated"):
            self.hooks.emit("on_token_generated", TokenGenerated(
                request.handle.request_id, request.options.tenant, request.slo_class, request.num_steps,
                step.token_id, step.text, now))
        request.num_steps += 1
        request.handle._push(step)

    def _finish(self, sid: int, request: _Request, outcome: RequestOutcome) -> None:
        with self._lock:
            if self._requests.pop(sid, None) is None:
                return  # ended already (a crash or close raced the last frame)
        self.hooks.emit("on_generation_complete", GenerationCompleted(
            outcome.request_id, request.options.tenant, request.slo_class, outcome.finish_reason,
            outcome.num_prompt_tokens, outcome.num_output_tokens, outcome.num_cached_tokens,
            outcome.num_preemptions, outcome.timings, None if outcome.error is None else str(outcome.error)))
        request.handle._push(outcome)

    def _end_all(self, process: WorkerProcess | None, error: MCPError) -> None:
        """End every request held by ``process`` (every request, for None) with ``error``."""
        with self._lock:
            ending = [(sid, r) for sid, r in self._requests.items() if process is None or r.process is process]
        now = time.monotonic()
        for sid, request in ending:
            timings = RequestTimings(request.arrival_s, request.first_token_s, now, None)
            self._finish(sid, request, RequestOutcome(
                request.handle.request_id, "error", request.handle.num_prompt_tokens, request.num_steps, 0, 0,
                timings, "", error))

    def _cancel(self, sid: int) -> None:
        with self._lock:
            request = self._requests.get(sid)
        if request is not None:
            request.process.send({"op": "cancel", "sid": sid})
