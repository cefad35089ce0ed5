"""The engine loop: iteration-level continuous batching in its own thread.

``submit`` checks a request, hands it to the scheduler at once (so admission control's
``CapacityError`` reaches the submitter synchronously) and returns a ``RequestHandle``.
The loop thread then repeats one step, top to bottom:

    drain new submissions (on_sequence_start) and cancellations -> scheduler.schedule(now)
    -> runner.execute(chunks) -> each sampling chunk's SequenceState.advance(logits row)
    -> scheduler.update(output, sampled, now, step_seconds) -> scheduler.finish for stops
    -> on_token_generated, then each request's StepOutput onto its own queue

Requests join and leave between steps. Whatever ends a request (stop, length, cancel,
deadline, error, close) frees its KV blocks in that step, fires on_generation_complete and
then sends its ``RequestOutcome`` (so hooks have run by the time the caller sees an event). A preempted request keeps its tokens and its SequenceState and
recomputes later. An exception in a step fails that step's requests with an ``EngineError``
and the loop serves the others. All times are ``time.monotonic()``.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import math
import os
import queue
import threading
import time
import weakref
from collections.abc import Sequence

import torch

from mcp.base.errors import EngineError, InvalidRequestError, RequestCancelled
from mcp.engine.engine import NativeEngine
from mcp.engine.handle import RequestHandle, RequestOptions
from mcp.engine.hooks import HookRegistry
from mcp.engine.kv.hybrid import HybridKVCacheManager, HybridKVStorage
from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.live import LiveRequest, LoopStats, StatsRecorder, chunk_token_ids
from mcp.engine.loop_config import LoopConfig, kv_cache_budget, kv_window_tokens
from mcp.engine.precision import TORCH_DTYPES
from mcp.engine.models import sliding_window_layers
from mcp.engine.runner import ModelRunner, StepChunk, allocate_hybrid_storage, allocate_storage, releases_window
from mcp.engine.sampler import Sampler, SamplingParams
from mcp.engine.scheduler.request import Request, RequestStatus
from mcp.engine.scheduler.scheduler import Scheduler, SchedulerOutput
from mcp.engine.sequence import SequenceState, check_prompt

logger = logging.getLogger("mcp.engine.loop")
_IDLE_WAIT_S = 0.005  # a step that scheduled nothing (a request preempted itself) waits this long
# Loops still running when the interpreter exits are closed first: a loop thread left inside
# torch while the process tears down its C++ state aborts it ("terminate called ...").
_OPEN_LOOPS: weakref.WeakSet[EngineLoop] = weakref.WeakSet()


@atexit.register
def _close_open_loops() -> None:
    for loop in list(_OPEN_LOOPS):
        loop.close()


class EngineLoop:
    """Serves one ``NativeEngine``'s requests from a daemon thread: a ``RequestLoop``
    (engine/contracts.py). Thread-safe."""

    def __init__(self, engine: NativeEngine, config: LoopConfig = LoopConfig(), hooks: HookRegistry | None = None,
                 name: str = "engine") -> None:
        self.engine, self.config, self.hooks = engine, config, hooks or HookRegistry()
        self.max_context = engine.max_context
        self.storage = _storage(engine, config)
        self.kv = _kv_manager(engine, self.storage, config)
        self.scheduler = Scheduler(self.kv, config.make_policy(), config.scheduler, pacing=config.make_pacing())
        self.runner = ModelRunner(engine.model, self.storage, engine.plan.decode_step == "native",
                                  engine.plan.decode_max_rows)
        self._cond = threading.Condition()  # guards the scheduler, the KV manager and _live
        self._live: dict[str, LiveRequest] = {}
        self._inbox: list[LiveRequest] = []  # submitted, on_sequence_start not yet fired
        self._cancels: queue.SimpleQueue[str] = queue.SimpleQueue()  # put() is safe even in __del__
        self._ids = itertools.count()
        self._stats = StatsRecorder()
        self._closing = self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"mcp-loop-{name}", daemon=True)
        self._thread.start()
        _OPEN_LOOPS.add(self)

    # -- the submitter's side -------------------------------------------------------------
    def submit(self, prompt_ids: Sequence[int], params: SamplingParams,
               options: RequestOptions = RequestOptions()) -> RequestHandle:
        """Queue one request and return its handle; bad input or a full engine raise here.

        Raises InvalidRequestError / ContextLengthError for a bad request, and
        ``CapacityError`` (with ``retry_after_s``) when admission control refuses it.
        """
        prompt_ids = self._checked_prompt(prompt_ids)
        for value, kind in ((params, SamplingParams), (options, RequestOptions)):
            if not isinstance(value, kind):
                raise InvalidRequestError(f"expected {kind.__name__}, got {type(value).__name__}")
        budget = min(params.max_tokens, self.max_context - len(prompt_ids))
        # built before the lock: its grammar (a response format) may take a while the first time,
        # and may refuse the request, which must happen before the scheduler holds it
        sequence = SequenceState(0, prompt_ids, params, budget, self.engine.tokenizer,
                                 Sampler(params, self.engine.device))
        with self._cond:
            if self._closing:
                raise InvalidRequestError("this engine loop is closed (its model was unloaded); load the model again")
            now = time.monotonic()
            deadline = None if options.timeout is None else now + options.timeout
            request = Request(f"req-{next(self._ids)}", prompt_ids, budget, options.slo_class, options.tenant, now,
                              deadline)
            self.scheduler.add(request, now)  # may raise CapacityError: nothing is registered then
            live = self._register(request, sequence)
            self._cond.notify()
        return live.handle

    def cancel(self, request_id: str) -> None:
        """End ``request_id`` at the next step (its blocks are freed then). Never blocks."""
        self._cancels.put(request_id)

    def stats(self) -> LoopStats:
        """A snapshot of the loop's counters and the KV cache's occupancy."""
        with self._cond:
            return self._stats.snapshot(self.scheduler, self.kv)

    def close(self) -> None:
        """Stop the thread; requests still running end with a ``RequestCancelled`` error.

        Returns once the thread has ended them (at once when a hook on the loop thread calls it).
        """
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    @property
    def closed(self) -> bool:
        return self._closed

    def _checked_prompt(self, prompt_ids: Sequence[int]) -> list[int]:
        if isinstance(prompt_ids, (str, bytes)) or not isinstance(prompt_ids, Sequence):
            raise InvalidRequestError(f"prompt_ids must be a list of token ids, got {type(prompt_ids).__name__}")
        ids = list(prompt_ids)
        check_prompt(ids, self.max_context)
        vocab = self.engine.model.arch.vocab_size
        bad = next((t for t in ids if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab), None)
        if bad is not None:
            raise InvalidRequestError(f"prompt_ids holds {bad!r}; token ids are integers in [0, {vocab})")
        return ids

    def _register(self, request: Request, sequence: SequenceState) -> LiveRequest:
        handle = RequestHandle(request.request_id, len(request.prompt_ids), self.cancel)
        live = LiveRequest(request, sequence, handle)
        self._live[request.request_id] = live
        self._inbox.append(live)
        return live

    # -- the loop thread ------------------------------------------------------------------
    def _run(self) -> None:
        reason, error = "cancelled", RequestCancelled("the model was unloaded while this request ran; "
                                                      "load it again and retry")
        try:
            while self._step():
                pass
        except BaseException as exc:  # a bug in the loop itself: end every request, never leave one hanging
            logger.exception("the engine loop failed; every request it held is ended")
            reason, error = "error", EngineError(f"the engine loop failed ({type(exc).__name__}: {exc}); "
                                                 "load the model again")
        with self._cond:
            self._closing = True
            self._start_submitted()
            for live in list(self._live.values()):
                self._end(live, reason, time.monotonic(), error=error)
            self._closed = True

    def _step(self) -> bool:
        """One engine step; False once the loop is closing."""
        with self._cond:
            while not (self._closing or self._inbox or self.scheduler.has_work()):
                self._cond.wait()
            if self._closing:
                return False
            output, chunks = self._schedule(time.monotonic())
        if not chunks:
            time.sleep(_IDLE_WAIT_S)
            return True
        started = time.monotonic()
        try:
            with torch.inference_mode():
                logits = self.runner.execute(chunks)  # [sampling chunks, vocab]
        except Exception as exc:  # noqa: BLE001 - the step's requests fail, the loop goes on
            logger.exception("an engine step of %d chunks failed", len(chunks))
            with self._cond:
                self._fail_step(output, exc)
            return True
        with self._cond:
            self._finish_step(output, logits, time.monotonic() - started)
        return True

    def _schedule(self, now: float) -> tuple[SchedulerOutput, list[StepChunk]]:
        self._start_submitted()
        self._apply_cancellations(now)
        output = self.scheduler.schedule(now)
        for request in output.expired:
            self._end(self._live[request.request_id], "deadline", now)
        chunks = []
        for chunk in output.chunks:
            live = self._live[chunk.request.request_id]
            if live.num_cached_tokens is None:  # its first schedule: the prefix cache gave chunk.start
                live.num_cached_tokens, live.scheduled_s = chunk.start, now
            stop = chunk.start + chunk.num_tokens
            request_id = chunk.request.request_id
            local_table = self.kv.local_table(request_id) if isinstance(self.kv, HybridKVCacheManager) else None
            chunks.append(StepChunk(chunk_token_ids(chunk.request, chunk.start, stop), chunk.start,
                                    self.kv.block_table(request_id), chunk.samples, local_table))
        self._stats.record_step(len(chunks), len(output.preempted))
        return output, chunks

    def _start_submitted(self) -> None:
        inbox, self._inbox = self._inbox, []
        for live in inbox:
            if self.hooks.has("on_sequence_start"):
                self.hooks.emit("on_sequence_start", live.started_event())

    def _apply_cancellations(self, now: float) -> None:
        while True:
            try:
                request_id = self._cancels.get_nowait()
            except queue.Empty:
                return
            live = self._live.get(request_id)
            if live is not None:
                self._end(live, "cancelled", now)

    def _finish_step(self, output: SchedulerOutput, logits: torch.Tensor, step_seconds: float) -> None:
        now = time.monotonic()
        sampling = [chunk.request.request_id for chunk in output.chunks if chunk.samples]
        steps = {}
        for request_id, row in zip(sampling, logits):
            live = self._live[request_id]
            try:
                steps[request_id] = live.sequence.advance(row, _never)
            except Exception as exc:  # noqa: BLE001 - this request fails, the others go on
                logger.exception("sampling for request %s failed", request_id)
                self._end(live, "error", now, error=_step_error(request_id, exc))
        self.scheduler.update(output, {rid: step.token_id for rid, step in steps.items()}, now, step_seconds)
        for request_id, step in steps.items():
            live = self._live[request_id]
            if self.hooks.has("on_token_generated"):  # hooks first: they have seen what the caller sees
                self.hooks.emit("on_token_generated", live.token_event(step, now))
            live.handle._push(step)
            if step.finish_reason is not None:
                self._end(live, step.finish_reason, now)

    def _fail_step(self, output: SchedulerOutput, exc: Exception) -> None:
        now = time.monotonic()
        for chunk in output.chunks:
            live = self._live.get(chunk.request.request_id)
            if live is not None:
                self._end(live, "error", now, error=_step_error(live.request.request_id, exc))

    def _end(self, live: LiveRequest, reason: str, now: float, error: Exception | None = None) -> None:
        """Take a request out of the loop: its blocks freed (if still scheduled), outcome sent."""
        request = live.request
        if request.status is not RequestStatus.FINISHED:
            self.scheduler.finish(request.request_id, reason)
        del self._live[request.request_id]
        tail = live.sequence.release_held() if reason in ("cancelled", "deadline") and error is None else ""
        outcome = live.outcome(reason, now, tail, error)
        self._stats.record_end()
        if self.hooks.has("on_generation_complete"):
            self.hooks.emit("on_generation_complete", live.completed_event(outcome))
        live.handle._push(outcome)


def _never() -> bool:
    return False


def _step_error(request_id: str, exc: Exception) -> EngineError:
    error = EngineError(f"the engine step running request {request_id} failed ({type(exc).__name__}: {exc}); "
                        "the request was ended and its KV blocks freed; the engine serves on, retry it")
    error.__cause__ = exc
    return error


def _storage(engine: NativeEngine, config: LoopConfig) -> PagedKVStorage | HybridKVStorage:
    """The KV cache within the configured or automatic budget; a model with windowed and global
    layers (Gemma 3) gets two pools, the windowed layers' bounded by the window (kv/hybrid.py)."""
    arch, model = engine.model.arch, engine.model
    dtype = model.dtype if config.kv_cache_dtype == "auto" else TORCH_DTYPES[config.kv_cache_dtype]
    per_layer = PagedKVStorage.bytes_per_block(1, 1, arch.num_kv_heads, arch.head_dim, dtype)
    step = config.scheduler.max_num_batched_tokens
    if not releases_window(model, config.block_size):
        budget = kv_cache_budget(config, arch.num_layers * per_layer, engine.max_context,
                                 available_memory_bytes(engine.device))
        return allocate_storage(model, budget, config.block_size, dtype)
    # what a token costs on average over a whole context: every global layer, and the windowed
    # layers only for the window and a step's worth of it
    num_local = sum(sliding_window_layers(arch))
    held = min(1.0, (arch.sliding_window + step + config.block_size) / engine.max_context)
    per_token = math.ceil(per_layer * (arch.num_layers - num_local + num_local * held))
    budget = kv_cache_budget(config, per_token, engine.max_context, available_memory_bytes(engine.device))
    return allocate_hybrid_storage(model, budget, config.block_size, dtype, config.scheduler.max_num_seqs, step)


def _kv_manager(engine: NativeEngine, storage: PagedKVStorage | HybridKVStorage,
                config: LoopConfig) -> KVCacheManager | HybridKVCacheManager:
    policy = (config.block_size, config.enable_prefix_caching, config.sink_tokens, config.window_tokens)
    if isinstance(storage, PagedKVStorage):  # a model windowed on every layer trims to its own window
        window = kv_window_tokens(config, engine.model.arch)
        return KVCacheManager(storage.num_blocks, *policy[:3], window,
                              exact_window=window is not None and config.window_tokens is None)
    local = KVCacheManager(storage.local.num_blocks, config.block_size, config.enable_prefix_caching,
                           window_tokens=engine.model.arch.sliding_window, exact_window=True)
    return HybridKVCacheManager(KVCacheManager(storage.full.num_blocks, *policy), local)


def available_memory_bytes(device: torch.device) -> int:
    """Memory free for new allocations: the CUDA device's, else the machine's (MemAvailable)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
