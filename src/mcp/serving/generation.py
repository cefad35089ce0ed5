"""Running one ``ServingRequest`` on a held model version: its choices, as async events.

No HTTP here (the gRPC service runs requests the same way). ``Generation.start`` submits
every choice at once, in a worker thread (tokenizing and admission take a few ms), so a
``CapacityError`` or ``ContextLengthError`` comes before any byte is sent. ``events()``
then yields each choice's tokens as the engine loop produces them; ``cancel()`` ends them
all (a client that went away).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

import anyio
import anyio.to_thread

from mcp.base.result import InferResult
from mcp.engine.sequence import StepOutput
from mcp.runtime.stream import TextStream
from mcp.serving.host import ModelVersion
from mcp.serving.request import ServingRequest
from mcp.serving.tools.plan import ToolPlan
from mcp.serving.tools.prompt import ToolPrompt, family_of, tool_prompt

# Worker threads that submit requests (tokenizing and admission), never the event loop.
_READERS = anyio.CapacityLimiter(1024)
_END = object()


@dataclass(frozen=True)
class ChoiceEvent:
    """A step of choice ``index``: a token (``step``) with its text, or its end (``result``)."""

    index: int
    text: str
    step: StepOutput | None = None
    result: InferResult | None = None


@dataclass
class Generation:
    """The choices of one request, on one model version."""

    version: ModelVersion
    tools: ToolPlan
    streams: list[TextStream] = field(default_factory=list)

    @classmethod
    async def start(cls, version: ModelVersion, request: ServingRequest) -> Generation:
        """Submit ``request.n`` choices per prompt (choice index = prompt * n + j)."""
        family = family_of(version.model.header.tokenizer.chat_template)
        plan = ToolPlan(family, request.tools, request.tool_choice, parallel=request.parallel_tool_calls)
        generation = cls(version, plan)
        await anyio.to_thread.run_sync(generation._submit_all, request, limiter=_READERS)
        return generation

    def _submit_all(self, request: ServingRequest) -> None:
        model, scheduling = self.version.model, request.scheduling()
        try:
            for prompt in request.prompts:
                rendered = self._rendered(prompt.messages, request) if prompt.messages is not None else None
                for j in range(request.n):
                    params = request.sampling.resolve(model.defaults, choice=j)
                    if rendered is None:
                        self.streams.append(model.start_stream(prompt.text or "", params, scheduling))
                    else:
                        self.streams.append(model.start_stream(rendered.messages, params, scheduling,
                                                               rendered.template_kwargs, rendered.continuation))
        except BaseException:
            self.cancel()  # refused part-way: nothing of this request stays queued
            raise

    def _rendered(self, messages, request: ServingRequest) -> ToolPrompt:
        """The conversation with the request's tools, as the model's template family takes them;
        the plan keeps the forced call's start (the parser puts it back in front)."""
        rendered = tool_prompt(messages, request.tools, request.tool_choice, self.tools.family,
                               request.template_kwargs)
        self.tools = replace(self.tools, continuation=rendered.continuation)
        return rendered

    def cancel(self) -> None:
        for stream in self.streams:
            stream.cancel()

    async def events(self) -> AsyncIterator[ChoiceEvent]:
        """Every choice's events, interleaved as they come; each choice ends with a result."""
        if len(self.streams) == 1:
            async for event in _choice_events(0, self.streams[0]):
                yield event
            return
        merged: asyncio.Queue[ChoiceEvent | BaseException | object] = asyncio.Queue()
        tasks = [asyncio.create_task(_pump(i, s, merged)) for i, s in enumerate(self.streams)]
        try:
            for _ in range(len(tasks)):
                while (item := await merged.get()) is not _END:
                    if isinstance(item, BaseException):
                        raise item
                    yield item
        finally:
            for task in tasks:
                task.cancel()

    async def results(self) -> list[InferResult]:
        """Read every choice to its end; the results in choice order."""
        results: dict[int, InferResult] = {}
        async for event in self.events():
            if event.result is not None:
                results[event.index] = event.result
        return [results[i] for i in range(len(self.streams))]


async def _choice_events(index: int, stream: TextStream) -> AsyncIterator[ChoiceEvent]:
    emitted = 0
    async for step in stream.asteps():
        emitted += len(step.text)
        yield ChoiceEvent(index, step.text, step=step)
    result = stream.result
    assert result is not None, "steps() sets the result at its end"
    yield ChoiceEvent(index, result.text[emitted:], result=result)  # text released by a cancel/deadline


async def _pump(index: int, stream: TextStream, merged: asyncio.Queue) -> None:
    try:
        async for event in _choice_events(index, stream):
            merged.put_nowait(event)
    except BaseException as exc:  # noqa: BLE001 - handed to the reader, which raises it
        merged.put_nowait(exc)
        return
    merged.put_nowait(_END)
