"""``TextStream``: what ``Model.stream`` / ``Model.chat_stream`` return.

An iterator of text deltas as the engine loop generates them, that can also stop the
request (``cancel()`` / ``close()``; dropping the stream, as a ``for`` loop that breaks
does, closes it too) and gives the ``InferResult`` once read to its end (``result``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

from mcp.base.result import InferResult
from mcp.engine.handle import RequestHandle
from mcp.engine.sequence import StepOutput


class TextStream(Iterator[str]):
    """Text deltas of one request. Read it from one thread; cancel it from any."""

    def __init__(self, handle: RequestHandle, finish: Callable[[RequestHandle], InferResult]) -> None:
        self._handle = handle
        self._finish = finish
        self._result: InferResult | None = None
        self._closed = False

    @property
    def request_id(self) -> str:
        return self._handle.request_id

    @property
    def num_prompt_tokens(self) -> int:
        """The prompt's length in tokens, known from submission (before any token)."""
        return self._handle.num_prompt_tokens

    @property
    def result(self) -> InferResult | None:
        """The InferResult (usage, finish_reason, timings from submission) once the stream
        has been read to its end; None before."""
        return self._result

    def __next__(self) -> str:
        if self._closed or self._result is not None:
            raise StopIteration
        for step in self._handle:  # raises the request's error, if it failed
            if step.text:
                return step.text
        self._result = self._finish(self._handle)
        tail = self._handle.outcome.tail_text if self._handle.outcome else ""
        if tail:  # text held back when a cancel or deadline ended it
            return tail
        raise StopIteration

    def steps(self) -> Iterator[StepOutput]:
        """The request's ``StepOutput``s (token id, text, logprobs) instead of text deltas.

        Read either this or the text deltas, not both. ``result`` is set at the end; text
        released by a cancel or deadline is ``result.text`` past the steps' own text.
        """
        if self._closed or self._result is not None:
            return
        yield from self._handle  # raises the request's error, if it failed
        self._result = self._finish(self._handle)

    async def asteps(self) -> AsyncIterator[StepOutput]:
        """``steps()`` for asyncio code: awaits each StepOutput on the running event loop
        without a thread per reader (see ``RequestHandle.aiter_steps``)."""
        if self._closed or self._result is not None:
            return
        async for step in self._handle.aiter_steps():  # raises the request's error, if it failed
            yield step
        self._result = self._finish(self._handle)

    def cancel(self) -> None:
        """Stop generating now: the engine ends the request at its next step and frees its
        KV blocks. Text already generated can still be read, then the stream ends with
        ``result.finish_reason == "cancelled"``."""
        self._handle.cancel()

    def close(self) -> None:
        """Cancel the request and end the stream here (later reads stop at once)."""
        self._handle.cancel()
        self._closed = True

    def __del__(self) -> None:
        # A stream dropped before its end (a ``for`` that breaks, a caller that went away)
        # must not keep generating. cancel() only puts an id on a queue: safe in a finalizer.
        handle = getattr(self, "_handle", None)
        if handle is not None and not handle.done:
            handle.cancel()
