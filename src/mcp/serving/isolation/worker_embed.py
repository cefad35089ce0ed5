"""Embeddings across the worker channel: an encoder served in its sandboxed worker.

The worker runs the encoder's ``EmbeddingLoop`` (engine/embedding_loop.py) as it runs a
decoder's ``EngineLoop``. An ``embed`` call carries the token ids and the scheduling options
down; the worker queues them at once (a refusal, such as an input past the model's limit,
is the call's error) and replies from a thread of its own once the vectors are ready, so the
channel's reader keeps serving other calls meanwhile. Vectors come up as JSON numbers: a
float32 survives the trip through a double exactly. On the supervisor's side
``WorkerEmbedding`` is the handle ``Model.start_embedding`` returns; its ``wait`` makes the
call and fires the loop's hooks around it, as the worker's own loop does in process, so the
server's metrics count embeddings whichever way the model runs. A cancel is not sent down: an
embedding step is short, and the request's vectors are simply dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from mcp.base.errors import InvalidRequestError, MCPError
from mcp.engine.embedding_loop import Embeddings
from mcp.engine.handle import RequestOptions
from mcp.engine.hooks import GenerationCompleted, HookRegistry, RequestTimings, SequenceStarted

_DEFAULT_WAIT_S = 600.0  # a request without a timeout: past this the worker is stuck

Reply = Callable[[dict[str, Any], Any, BaseException | None], None]


def encode_options(options: RequestOptions) -> dict[str, Any]:
    return {"slo_class": options.slo_class.name.lower(), "tenant": options.tenant, "timeout": options.timeout}


# -- the worker's side ---------------------------------------------------------------------
def answer_embedding(loop: Any, message: dict[str, Any], reply: Reply) -> None:
    """Queue an ``embed`` call's inputs on the worker's loop; reply when its vectors are ready."""
    embed = getattr(loop, "embed", None)
    try:
        if embed is None:
            raise InvalidRequestError("this worker's model generates text; it cannot embed")
        handle = embed(message["inputs"], RequestOptions(**message["options"]))
    except MCPError as exc:
        reply(message, None, exc)
        return
    threading.Thread(target=_reply_when_done, args=(handle, message, reply), name="mcp-worker-embed",
                     daemon=True).start()


def _reply_when_done(handle, message: dict[str, Any], reply: Reply) -> None:
    try:
        done = handle.wait()
    except MCPError as exc:
        reply(message, None, exc)
        return
    reply(message, {"vectors": done.vectors.tolist(), "num_tokens": list(done.num_tokens),
                    "queue_s": done.queue_s, "total_s": done.total_s}, None)


# -- the supervisor's side -------------------------------------------------------------------
class WorkerEmbedding:
    """An embedding request for a model in a worker: ``wait`` runs it there."""

    def __init__(self, call: Callable[..., Any], hooks: HookRegistry, request_id: str,
                 inputs_ids: Sequence[Sequence[int]], options: RequestOptions, clock: Callable[[], float]) -> None:
        self._call, self._hooks, self.request_id = call, hooks, request_id
        self._inputs, self._options, self._clock = [list(ids) for ids in inputs_ids], options, clock

    def wait(self, timeout: float | None = None) -> Embeddings:
        options, started = self._options, self._clock()
        num_tokens = sum(map(len, self._inputs))
        slo_class = options.slo_class.name.lower()
        self._hooks.emit("on_sequence_start", SequenceStarted(self.request_id, options.tenant, slo_class, num_tokens,
                                                              started))
        reason, error = "stop", None
        try:
            data = self._call("embed", timeout or options.timeout or _DEFAULT_WAIT_S, inputs=self._inputs,
                              options=encode_options(options))
            return Embeddings(torch.tensor(data["vectors"], dtype=torch.float32), tuple(data["num_tokens"]),
                              float(data["queue_s"]), float(data["total_s"]))
        except MCPError as exc:
            reason, error = "error", exc
            raise
        finally:
            now = self._clock()
            self._hooks.emit("on_generation_complete", GenerationCompleted(
                self.request_id, options.tenant, slo_class, reason, num_tokens, 0, 0, 0,
                RequestTimings(started, now if error is None else None, now, started),
                None if error is None else str(error)))

    def cancel(self) -> None:
        """Nothing to stop in the worker (see the module doc)."""
