"""The encoder's request loop: embedding requests batched step by step on one thread.

An encoder has no KV cache and attends both ways, so an input cannot be prefilled in chunks
or joined mid-way like a decoder's sequence: each step runs whole inputs. What a step takes
is the scheduler's business as for generation: the same ``SchedulerConfig`` limits
(``max_num_seqs`` inputs, ``max_num_batched_tokens`` tokens, though always at least one
input) and the same policy's order (SLO class with aging, tenant fair share, arrival; each
input is a scheduler ``Request`` so the policy ranks it as any other), the same admission
bound (past ``max_waiting`` queued inputs, a ``CapacityError`` with a retry hint) and the
same hooks (``on_sequence_start`` as a step takes an input, ``on_generation_complete`` when
its vector is ready: serving's metrics and audit see embeddings as they see completions).
The inputs of one step are right-padded into one batch [B, T] and pooled as the model's
``Pooling`` says (engine/pooling.py). ``submit`` of a generation raises: an encoder only embeds.
A decoder that declares a pooling (a sentence-transformers Qwen2, say) embeds through a loop of
its own beside its generation loop: each step runs its inputs through a contiguous cache of
their own, causal attention keeping each row's right-padding unseen.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mcp.base.errors import CapacityError, ContextLengthError, EngineError, InvalidRequestError, MCPError, RequestCancelled
from mcp.engine.handle import RequestOptions
from mcp.engine.hooks import GenerationCompleted, HookRegistry, RequestTimings, SequenceStarted
from mcp.engine.layers.attention import attention_inputs
from mcp.engine.live import LoopStats
from mcp.engine.loop_config import LoopConfig
from mcp.engine.pooling import pool
from mcp.engine.scheduler.request import Request

logger = logging.getLogger("mcp.engine.embedding_loop")


@dataclass(frozen=True)
class Embeddings:
    """One embedding request's answer: a vector per input, in order."""

    vectors: torch.Tensor  # fp32 [inputs, hidden]
    num_tokens: tuple[int, ...]  # tokens of each input (with the special ones)
    queue_s: float  # arrival to the step that ran the last input
    total_s: float


class EmbeddingHandle:
    """What ``EmbeddingLoop.embed`` returns: wait for the vectors, or cancel the request."""

    def __init__(self, request_id: str, num_inputs: int, cancel) -> None:
        self.request_id, self._cancel = request_id, cancel
        self._done = threading.Event()
        self._vectors: list[torch.Tensor | None] = [None] * num_inputs
        self._error: MCPError | None = None
        self.result: Embeddings | None = None

    def wait(self, timeout: float | None = None) -> Embeddings:
        """Block until every input is embedded; raises the request's error if it failed."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"embedding request {self.request_id} is still running")
        if self._error is not None:
            raise self._error
        assert self.result is not None
        return self.result

    def cancel(self) -> None:
        self._cancel(self.request_id)


@dataclass(eq=False)
class _Pending:
    handle: EmbeddingHandle
    inputs: list[Request]
    arrival_s: float
    num_left: int
    started: bool = False


class EmbeddingLoop:
    """Serves one encoder's embedding requests from a daemon thread; thread-safe. It is a
    ``RequestLoop`` (engine/contracts.py) whose ``submit`` refuses generation."""

    def __init__(self, engine, config: LoopConfig = LoopConfig(), hooks: HookRegistry | None = None,
                 name: str = "encoder") -> None:
        self.engine, self.hooks, self.name = engine, hooks or HookRegistry(), name
        self.max_context = engine.max_context
        self.config, self.limits, self.policy = config, config.scheduler, config.make_policy()
        self.pooling = engine.header.architecture.pooling
        self._cond = threading.Condition()
        self._waiting: list[Request] = []
        self._pending: dict[str, _Pending] = {}
        self._ids = itertools.count()
        self._num_steps = self._max_batch = self._num_finished = 0
        self._closing = self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"mcp-embed-{name}", daemon=True)
        self._thread.start()

    # -- the submitter's side -------------------------------------------------------------
    def embed(self, inputs_ids: Sequence[Sequence[int]], options: RequestOptions = RequestOptions()) -> EmbeddingHandle:
        """Queue one request of one or more tokenized inputs; bad input or a full queue raise here."""
        inputs = [self._checked(ids, i) for i, ids in enumerate(inputs_ids)]
        if not inputs:
            raise InvalidRequestError("an embedding request needs at least one input")
        with self._cond:
            if self._closing:
                raise InvalidRequestError("this encoder's loop is closed (its model was unloaded); load it again")
            if len(self._waiting) + len(inputs) > self.limits.max_waiting * self.limits.max_num_seqs:
                raise CapacityError(f"the encoder is saturated: {len(self._waiting)} inputs wait; retry later",
                                    retry_after_s=1.0)
            now, request_id = time.monotonic(), f"emb-{next(self._ids)}"
            deadline = None if options.timeout is None else now + options.timeout
            requests = [Request(f"{request_id}.{i}", ids, 1, options.slo_class, options.tenant, now, deadline)
                        for i, ids in enumerate(inputs)]
            handle = EmbeddingHandle(request_id, len(requests), self._cancel)
            self._pending[request_id] = _Pending(handle, requests, now, len(requests))
            self._waiting.extend(requests)
            self._cond.notify()
        return handle

    def submit(self, prompt_ids, params, options=RequestOptions()):
        raise InvalidRequestError(f"{self.name!r} is an embedding model ({self.pooling.mode} pooling); "
                                  "it cannot generate text: ask it for embeddings (/v1/embeddings, model.embed)")

    def cancel(self, request_id: str) -> None:
        self._cancel(request_id)

    def stats(self) -> LoopStats:
        with self._cond:
            return LoopStats(self._num_steps, self._max_batch, 0, self._num_finished, 0, len(self._waiting))

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    @property
    def closed(self) -> bool:
        return self._closed

    def _checked(self, ids: Sequence[int], index: int) -> list[int]:
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise InvalidRequestError(f"input {index} must be a list of token ids, got {type(ids).__name__}")
        ids = list(ids)
        if not ids:
            raise InvalidRequestError(f"input {index} is empty: give at least one token of text")
        if len(ids) > self.max_context:
            raise ContextLengthError(f"input {index} has {len(ids)} tokens but {self.name!r} embeds at "
                                     f"most {self.max_context} tokens an input (its special tokens included); "
                                     "shorten or split it")
        vocab = self.engine.header.architecture.vocab_size
        bad = next((t for t in ids if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab), None)
        if bad is not None:
            raise InvalidRequestError(f"input {index} holds {bad!r}; token ids are integers in [0, {vocab})")
        return ids

    def _cancel(self, request_id: str) -> None:
        with self._cond:
            pending = self._pending.get(request_id)
            if pending is not None:
                self._end(pending, "cancelled", RequestCancelled(f"embedding request {request_id} was cancelled"))

    # -- the loop thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._closing or self._waiting):
                    self._cond.wait()
                if self._closing:
                    break
                batch = self._schedule(time.monotonic())
            if batch:
                self._step(batch)
        with self._cond:
            for pending in list(self._pending.values()):
                self._end(pending, "cancelled", RequestCancelled("the model was unloaded while this request ran"))
            self._closed = True

    def _schedule(self, now: float) -> list[Request]:
        """The inputs of the next step, in the policy's order, within the step's limits."""
        for request in [r for r in self._waiting if r.deadline_s is not None and now >= r.deadline_s]:
            pending = self._pending.get(request.request_id.rsplit(".", 1)[0])
            if pending is not None:
                self._end(pending, "deadline", RequestCancelled(
                    f"embedding request {pending.handle.request_id} passed its deadline before it ran"))
        self._waiting.sort(key=lambda r: self.policy.key(r, now))
        batch, tokens = [], 0
        for request in self._waiting:
            if len(batch) == self.limits.max_num_seqs:
                break
            if batch and tokens + len(request.prompt_ids) > self.limits.max_num_batched_tokens:
                continue
            batch.append(request)
            tokens += len(request.prompt_ids)
        for request in batch:
            self._waiting.remove(request)
            self._started(request, now)
        return batch

    def _step(self, batch: list[Request]) -> None:
        try:
            with torch.inference_mode():
                vectors = self._forward([r.prompt_ids for r in batch])
        except Exception as exc:  # noqa: BLE001 - the step's requests fail, the loop goes on
            logger.exception("an embedding step of %d inputs failed", len(batch))
            error = EngineError(f"the embedding step failed ({type(exc).__name__}: {exc}); retry the request")
            with self._cond:
                for request in batch:
                    pending = self._pending.get(request.request_id.rsplit(".", 1)[0])
                    if pending is not None:
                        self._end(pending, "error", error)
            return
        with self._cond:
            self._num_steps += 1
            self._max_batch = max(self._max_batch, len(batch))
            for request, vector in zip(batch, vectors):
                self._deliver(request, vector, time.monotonic())

    def _forward(self, inputs: list[list[int]]) -> torch.Tensor:
        """Right-padded inputs [B, T] through the encoder, pooled: fp32 [B, hidden]."""
        device = self.engine.device
        length = max(map(len, inputs))
        ids = torch.zeros(len(inputs), length, dtype=torch.long)
        for row, input_ids in enumerate(inputs):
            ids[row, :len(input_ids)] = torch.tensor(input_ids)
        lengths = torch.tensor([len(i) for i in inputs])
        mask = torch.arange(length)[None, :] < lengths[:, None]
        model, ids = self.engine.model, ids.to(device)
        if self.engine.is_encoder:
            hidden = model(ids, mask.to(device))
        else:  # a decoder that declares a pooling: causal, so right-padding is never seen by a real token
            cache = model.new_cache(len(inputs), length)
            hidden = model(ids, cache, attention_inputs([0] * len(inputs), length, cache))
        return pool(hidden, lengths.to(device), self.pooling).cpu()

    def _started(self, request: Request, now: float) -> None:
        request.first_token_s = now
        self.policy.fair_share.charge(request.tenant, len(request.prompt_ids))
        pending = self._pending[request.request_id.rsplit(".", 1)[0]]
        if not pending.started:
            pending.started = True
            if self.hooks.has("on_sequence_start"):
                tokens = sum(len(r.prompt_ids) for r in pending.inputs)
                self.hooks.emit("on_sequence_start", SequenceStarted(
                    pending.handle.request_id, request.tenant, request.slo_class.name.lower(), tokens, pending.arrival_s))

    def _deliver(self, request: Request, vector: torch.Tensor, now: float) -> None:
        pending = self._pending.get(request.request_id.rsplit(".", 1)[0])
        if pending is None:
            return  # cancelled while its step ran
        pending.handle._vectors[int(request.request_id.rsplit(".", 1)[1])] = vector
        pending.num_left -= 1
        if pending.num_left == 0:
            first = min(r.first_token_s for r in pending.inputs)
            last = max(r.first_token_s for r in pending.inputs)
            pending.handle.result = Embeddings(torch.stack(pending.handle._vectors),
                                               tuple(len(r.prompt_ids) for r in pending.inputs),
                                               last - pending.arrival_s, now - pending.arrival_s)
            self._end(pending, "stop", None, RequestTimings(pending.arrival_s, now, now, first))

    def _end(self, pending: _Pending, reason: str, error: MCPError | None, timings: RequestTimings | None = None) -> None:
        handle = pending.handle
        del self._pending[handle.request_id]
        self._waiting = [r for r in self._waiting if r not in pending.inputs]
        self._num_finished += 1
        if self.hooks.has("on_generation_complete"):
            now = time.monotonic()
            first = pending.inputs[0]
            self.hooks.emit("on_generation_complete", GenerationCompleted(
                handle.request_id, first.tenant, first.slo_class.name.lower(), reason,
                sum(len(r.prompt_ids) for r in pending.inputs), 0, 0, 0,
                timings or RequestTimings(pending.arrival_s, None, now, None), None if error is None else str(error)))
        handle._error = error
        handle._done.set()
