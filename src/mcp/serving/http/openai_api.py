"""``/v1/chat/completions``, ``/v1/completions``, ``/v1/models``: OpenAI's API on the host's models.

A request's path: authenticate (``Authorization: Bearer``) -> check the server's limits and
build the one typed request (``convert.py``: a ``ServingRequest``) -> tenant rate limit -> governance input
check, when configured (detectors and policy: a deny is a 403, a reroute names another model)
-> hold the model version (``model``: name, name:version, or empty for the default) -> submit
every choice (admission control may refuse: 429) -> answer, or stream server-sent events. The
SLO class comes from the ``x-sla-class`` header, the tenant from the key (or, on an open
server, the ``x-tenant-id`` header). A client that goes away cancels its sequences; the
version is released when the last byte is sent. With governance, each choice's text passes
the output policy (streamed text on a sliding window) and the audit record is committed
before the response completes; what the policies redacted is reported on the answer
(``x-mcp-redactions``, ``mcp_redactions``: serving/redactions.py). That lifecycle (admission,
guard, record, finish once, release, count tokens) is ``serving/reply.py``'s, shared with gRPC;
this module renders it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import StreamingResponse

from mcp.base.errors import MCPError, ModelNotFoundError
from mcp.serving.errors import describe
from mcp.serving.generation import ChoiceEvent, Generation
from mcp.serving.http import convert, render
from mcp.serving.http import schemas as s
from mcp.serving.http.auth import caller_of, state_of
from mcp.serving.http.fields import IGNORED_HEADER
from mcp.serving.redactions import redactions_header
from mcp.serving.reply import Reply
from mcp.serving.request import ServingRequest
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller
from mcp.serving.tools.plan import ToolStream

router = APIRouter(tags=["openai"])
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorResponse} for code in (400, 401, 403, 404, 413, 429, 500)}
SLA_CLASS = Header(None, description="the request's SLO class (case-insensitive)",
                   json_schema_extra={"enum": ["critical", "high", "medium", "low"]})
# One server-sent event, the way OpenAPI 3.2 describes `text/event-stream` (3.0/3.1 tools read
# `schema` as the schema of each parsed event): `data` is a chunk's JSON, the last one `[DONE]`.
STREAM = {"text/event-stream": {"schema": {
    "type": "object", "required": ["data"],
    "properties": {"data": {"type": "string", "contentMediaType": "application/json",
                            "description": "a completion chunk as JSON; the stream ends with data: [DONE]"},
                   "event": {"type": "string"}, "id": {"type": "string"}, "retry": {"type": "integer"}}}}}


@router.get("/v1/models", response_model=s.ModelList, responses=ERRORS)
async def list_models(state: ServerState = Depends(state_of), caller: Caller = Depends(caller_of)) -> s.ModelList:
    cards = [s.ModelCard(id=name, created=int(v.loaded_at)) for name, v in sorted(state.host.current().items())]
    cards += [s.ModelCard(id=v.key, created=int(v.loaded_at)) for v in state.host.versions()]
    return s.ModelList(data=cards)


@router.get("/v1/models/{model_id:path}", response_model=s.ModelCard, responses=ERRORS)
async def retrieve_model(model_id: str, state: ServerState = Depends(state_of),
                         caller: Caller = Depends(caller_of)) -> s.ModelCard:
    """One model by the id ``/v1/models`` lists (a name, or name:version); 404 if none is loaded."""
    current = state.host.current()
    if model_id in current:
        return s.ModelCard(id=model_id, created=int(current[model_id].loaded_at))
    for version in state.host.versions():
        if version.key == model_id:
            return s.ModelCard(id=model_id, created=int(version.loaded_at))
    raise ModelNotFoundError(f"no model {model_id!r} is loaded; GET /v1/models lists the ones that are")


@router.post("/v1/chat/completions", response_model=s.ChatCompletionResponse,
             responses={**ERRORS, 200: {"content": STREAM}})
async def chat_completions(body: s.ChatCompletionRequest, request: Request, response: Response,
                           x_sla_class: str | None = SLA_CLASS, state: ServerState = Depends(state_of),
                           caller: Caller = Depends(caller_of)):
    served = convert.request_of(body, f"{request.method} {request.url.path}", request.headers, x_sla_class,
                                state.config, caller.tenant.name)
    return await _serve(request, response, state, caller, body, served)


@router.post("/v1/completions", response_model=s.CompletionResponse,
             responses={**ERRORS, 200: {"content": STREAM}})
async def completions(body: s.CompletionRequest, request: Request, response: Response,
                      x_sla_class: str | None = SLA_CLASS,
                      state: ServerState = Depends(state_of), caller: Caller = Depends(caller_of)):
    served = convert.request_of(body, f"{request.method} {request.url.path}", request.headers, x_sla_class,
                                state.config, caller.tenant.name)
    return await _serve(request, response, state, caller, body, served)


# -- running it -------------------------------------------------------------------------------
async def _serve(request: Request, response: Response, state: ServerState, caller: Caller,
                 body: s.ChatCompletionRequest | s.CompletionRequest, served: ServingRequest):
    state.limiter.admit(caller.tenant)
    if state.fault_delay_s:  # the injected delay of $MCP_FAULT_DELAY_MS (a test and chaos knob)
        await asyncio.sleep(state.fault_delay_s)
    reply = await Reply.start(state, caller.tenant, served)
    answer = _Answer(reply, legacy=getattr(body, "functions", None) is not None)
    ignored = {IGNORED_HEADER: ", ".join(served.ignored_fields)} if served.ignored_fields else {}
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.include_usage)
        return FinishingStream(answer.stream(usage), reply.finish, media_type="text/event-stream",
                                headers=stream_headers(reply, ignored))
    response.headers.update(ignored)
    try:
        whole = await answer.whole(request)
    finally:
        reply.finish()
    response.headers.update(redactions_header(reply.redactions()))
    return whole


def stream_headers(reply: Reply, ignored: dict[str, str]) -> dict[str, str]:
    """A stream's headers: no caching or proxy buffering, the ignored fields, and what the
    input policy redacted (the answer's redactions come in the stream's last event)."""
    redacted = reply.redactions()
    return {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **ignored,
            **redactions_header(redacted.prompt_only() if redacted is not None else None)}


class FinishingStream(StreamingResponse):
    """A stream that finishes its reply however the response ends. A client that hangs up before
    the first byte ends the response before its body generator ever starts, so the generator's
    own ``finally`` never runs (and Starlette skips background tasks on a disconnect): the
    request's one audit record and its release are made here instead (``finish`` runs once)."""

    def __init__(self, content, on_end, **kwargs) -> None:
        super().__init__(content, **kwargs)
        self._on_end = on_end

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_end()


class _Answer:
    """A ``Reply`` (serving/reply.py: the lifecycle gRPC drives too) in OpenAI's wire format:
    one response, or server-sent chunks."""

    def __init__(self, reply: Reply, legacy: bool = False) -> None:
        self.reply, self.chat, self.id = reply, reply.request.chat, reply.request.request_id
        self.legacy = legacy  # the request sent functions: calls answer as a function_call
        tools = reply.generation.tools
        self.tool_streams = [tools.stream() for _ in range(reply.num_choices)] if tools.active else []
        self.num_prompts = len(reply.request.prompts)
        self.created = int(time.time())

    async def whole(self, request: Request) -> s.ChatCompletionResponse | s.CompletionResponse:
        reply = self.reply
        watcher = asyncio.create_task(cancel_on_disconnect(request, reply.generation))
        try:
            results, steps = await reply.whole()
        finally:
            watcher.cancel()
        if self.chat:
            whole = render.chat_response(self.id, self.created, reply.version.key, results, steps, reply.decode,
                                         reply.generation.tools, self.legacy)
        else:
            whole = render.completion_response(self.id, self.created, reply.version.key, results, steps,
                                               reply.decode, self.num_prompts)
        return whole.model_copy(update={"mcp_redactions": s.RedactionReport.of(reply.redactions())})

    async def stream(self, include_usage: bool) -> AsyncIterator[bytes]:
        reply = self.reply
        try:
            if self.chat:
                yield render.sse(self._chat_chunk([s.ChatChunkChoice(index=i, delta=s.ChatDelta(role="assistant"))
                                                   for i in range(reply.num_choices)]))
            async for event in reply.events():
                chunks = self._chunks(event)
                if not include_usage and len(reply.results) == reply.num_choices:  # the answer's last chunk
                    chunks[-1] = self._with_redactions(chunks[-1])
                for chunk in chunks:
                    yield render.sse(chunk)
            if include_usage:
                usage = render.usage([reply.results[i] for i in sorted(reply.results)], self.num_prompts)
                last = self._chat_chunk([], usage) if self.chat else self._text_chunk([], usage)
                yield render.sse(self._with_redactions(last))
            await reply.settle()  # committed before the stream completes
        except MCPError as exc:  # after the 200 went out: the error travels as an event
            await reply.settle_failed(exc)
            yield render.sse(s.ErrorResponse.model_validate(describe(exc).body()))
        finally:
            reply.finish()  # the client left: recorded as cancelled (a no-op once recorded)
        yield render.SSE_DONE

    def _chunks(self, event: ChoiceEvent) -> list[s.ChatCompletionChunk | s.CompletionResponse]:
        """What one event sends: nothing, or chunks; a choice's end always sends one."""
        if self.tool_streams:
            return list(self._tool_chunks(event, self.tool_streams[event.index]))
        if event.text or event.result is not None or (self.reply.decode and event.step is not None):
            return [self._chunk(event)]
        return []

    def _with_redactions(self, chunk: s.ChatCompletionChunk | s.CompletionResponse,
                         ) -> s.ChatCompletionChunk | s.CompletionResponse:
        """The stream's last chunk carries what governance redacted in the whole request."""
        return chunk.model_copy(update={"mcp_redactions": s.RedactionReport.of(self.reply.redactions())})

    def _chunk(self, event: ChoiceEvent) -> s.ChatCompletionChunk | s.CompletionResponse:
        reason = event.result.finish_reason if event.result is not None else None
        steps = [event.step] if event.step is not None else []
        decode = self.reply.decode
        if self.chat:
            logprobs = render.chat_logprobs(steps, decode) if decode else None
            delta = s.ChatDelta(content=event.text)
            return self._chat_chunk([s.ChatChunkChoice(index=event.index, delta=delta, finish_reason=reason,
                                                       logprobs=logprobs)])
        logprobs = render.completion_logprobs(steps, decode) if decode else None
        return self._text_chunk([s.CompletionChoice(index=event.index, text=event.text, finish_reason=reason,
                                                    logprobs=logprobs)])

    def _tool_chunks(self, event: ChoiceEvent, stream: ToolStream) -> list[s.ChatCompletionChunk]:
        """A step of a choice that may call tools: its content while no call may have started, and
        at its end the calls as tool-call deltas (``finish_reason`` ``tool_calls``)."""
        chunks = []
        content = stream.feed(event.text)
        if content:
            chunks.append(self._chat_chunk([s.ChatChunkChoice(index=event.index, delta=s.ChatDelta(content=content))]))
        if event.result is None:
            return chunks
        answer = stream.finish()
        if self.legacy and answer.tool_calls:  # one call, as a function_call delta
            call = answer.tool_calls[0]
            delta = s.ChatDelta(content=answer.content,
                                function_call=s.FunctionCallDelta(name=call.name, arguments=call.arguments))
        else:
            delta = s.ChatDelta(content=answer.content, tool_calls=render.tool_call_deltas(answer) or None)
        if delta.content or delta.tool_calls or delta.function_call:
            chunks.append(self._chat_chunk([s.ChatChunkChoice(index=event.index, delta=delta)]))
        reason = event.result.finish_reason
        if answer.tool_calls:
            reason = "function_call" if self.legacy else "tool_calls"
        chunks.append(self._chat_chunk([s.ChatChunkChoice(index=event.index, delta=s.ChatDelta(),
                                                          finish_reason=reason)]))
        return chunks

    def _chat_chunk(self, choices: list[s.ChatChunkChoice], usage: s.Usage | None = None) -> s.ChatCompletionChunk:
        return s.ChatCompletionChunk(id=self.id, created=self.created, model=self.reply.version.key, choices=choices,
                                     usage=usage)

    def _text_chunk(self, choices: list[s.CompletionChoice], usage: s.Usage | None = None) -> s.CompletionResponse:
        return s.CompletionResponse(id=self.id, created=self.created, model=self.reply.version.key, choices=choices,
                                    usage=usage)


async def cancel_on_disconnect(request: Request, generation: Generation) -> None:
    while not await request.is_disconnected():
        await asyncio.sleep(0.2)
    generation.cancel()
