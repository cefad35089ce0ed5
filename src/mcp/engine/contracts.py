"""The two contracts where implementations are swapped behind the SDK's ``Model``.

``RequestLoop``: what runs a model's requests. ``EngineLoop`` (engine/loop.py) does it on a thread
in this process; serving's ``WorkerLoop`` (serving/isolation/worker_loop.py) does it in a
supervised worker process. ``Model`` and serving drive either through these operations only.

``EngineView``: what ``Model`` reads of the engine behind it: the header, the tokenizer (prompts
are tokenized on the caller's side of either loop), the precision and its plan, the context
length. ``NativeEngine`` is one; serving's ``WorkerEngineView`` describes an engine that lives in
a worker; ``runtime.model.UnloadedEngine`` is what an unloaded model keeps (its description, not
its weights).

Both are ``typing.Protocol``s (structural: an implementation names no base class), checked by
tests/runtime/test_contracts.py against each implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from mcp.engine.handle import RequestHandle, RequestOptions
from mcp.engine.live import LoopStats
from mcp.engine.sampler import SamplingParams
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.spec import ModelHeader


@runtime_checkable
class RequestLoop(Protocol):
    """Runs one model's requests, batched together; every operation is thread-safe."""

    max_context: int  # the longest prompt + completion, in tokens, a request may have

    def submit(self, prompt_ids: Sequence[int], params: SamplingParams,
               options: RequestOptions = ...) -> RequestHandle:
        """Queue one request and return its handle at once. A bad request raises
        InvalidRequestError / ContextLengthError here; a refusal raises CapacityError (with a
        retry hint); a closed loop raises InvalidRequestError. Nothing is queued when it raises."""
        ...

    def cancel(self, request_id: str) -> None:
        """End a request at the next step (its handle ends with finish_reason "cancelled" and its
        KV blocks are freed then). Never blocks; an unknown or finished id is ignored."""
        ...

    def stats(self) -> LoopStats:
        """A snapshot of the counters and the KV cache's occupancy."""
        ...

    def close(self) -> None:
        """Stop: every request still running ends with RequestCancelled, later submits raise.
        Returns once they have ended."""
        ...

    @property
    def closed(self) -> bool:
        """True once ``close`` has finished."""
        ...


class PrecisionPlanView(Protocol):
    by_tensor: Mapping[str, Any]  # tensor name -> the kernel its decode runs


@runtime_checkable
class EngineView(Protocol):
    """What ``Model`` reads of its engine; none of it needs the weights."""

    header: ModelHeader
    tokenizer: Tokenizer
    precision: str
    max_context: int
    plan: PrecisionPlanView
    backend_name: str
