"""``/v1/messages`` and ``/v1/messages/count_tokens``: Anthropic's Messages API on the host's models.

The body is converted once into the typed ``ServingRequest`` (``messages_convert.py``) and runs
the lifecycle every route runs (``serving/reply.py``): tenant rate limit, governance input
check, model version held, admission control, output policy, one audit record, metrics. The
key comes as ``x-api-key`` (Anthropic's header) or ``Authorization: Bearer`` and names a
tenant the same way (``auth.py``); the SLO class comes from ``x-sla-class``. Errors leave in
Anthropic's shape, ``{"type": "error", "error": {"type", "message"}}`` (``MessagesRoute``), and
a streamed answer uses Anthropic's event types (``messages_render.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from mcp.base.errors import MCPError
from mcp.engine.prompting import chat_ids
from mcp.serving.errors import describe
from mcp.serving.http import messages_convert as convert
from mcp.serving.http import messages_render as render
from mcp.serving.http import messages_schemas as m
from mcp.serving.http.auth import caller_of, state_of
from mcp.serving.http.errors import count_refusal, field_error
from mcp.serving.http.fields import IGNORED_HEADER
from mcp.serving.http.openai_api import SLA_CLASS, FinishingStream, cancel_on_disconnect, stream_headers
from mcp.serving.http.schemas import ErrorResponse, RedactionReport
from mcp.serving.redactions import redactions_header
from mcp.serving.reply import Reply
from mcp.serving.request import ServingRequest
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller
from mcp.serving.tools.parse import ParsedAnswer
from mcp.serving.tools.prompt import family_of, tool_prompt

logger = logging.getLogger("mcp.serving.http")


class MessagesRoute(APIRoute):
    """A route whose every error, a bad body included, answers in Anthropic's error shape."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                wire = describe(field_error(exc.errors()))
            except MCPError as exc:
                wire = describe(exc)
            except Exception as exc:  # noqa: BLE001 - a bug: logged, answered as a 500
                logger.exception("unexpected error on %s %s", request.method, request.url.path)
                wire = describe(exc)
            count_refusal(request, wire)
            headers = {"Retry-After": str(wire.retry_after_s)} if wire.retry_after_s is not None else None
            return JSONResponse(render.error_body(wire), status_code=wire.status, headers=headers)

        return answer


router = APIRouter(tags=["anthropic"], route_class=MessagesRoute)
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": m.AnthropicError} for code in (400, 401, 403, 404, 429, 500)}
ERRORS[413] = {"model": ErrorResponse}  # the body limit answers before the route runs: OpenAI's shape
STREAM = {"text/event-stream": {"schema": {
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"type": "string", "description": "message_start, content_block_start, ping, "
                                                              "content_block_delta, content_block_stop, "
                                                              "message_delta, message_stop or error"},
                   "data": {"type": "string", "contentMediaType": "application/json"}}}}}


@router.post("/v1/messages", response_model=m.MessageResponse, responses={**ERRORS, 200: {"content": STREAM}})
async def create_message(body: m.MessagesRequest, request: Request, response: Response,
                         x_sla_class: str | None = SLA_CLASS, state: ServerState = Depends(state_of),
                         caller: Caller = Depends(caller_of)):
    served = convert.request_of(body, request.headers, x_sla_class, state.config, caller.tenant.name)
    state.limiter.admit(caller.tenant)
    reply = await Reply.start(state, caller.tenant, served)
    answer = _MessagesAnswer(reply, body.stop_sequences or ())
    ignored = {IGNORED_HEADER: ", ".join(served.ignored_fields)} if served.ignored_fields else {}
    if body.stream:
        return FinishingStream(answer.stream(), reply.finish, media_type="text/event-stream",
                                headers=stream_headers(reply, ignored))
    response.headers.update(ignored)
    try:
        whole = await answer.whole(request)
    finally:
        reply.finish()
    response.headers.update(redactions_header(reply.redactions()))
    return whole


@router.post("/v1/messages/count_tokens", response_model=m.CountTokensResponse, responses=ERRORS)
async def count_tokens(body: m.CountTokensRequest, request: Request, state: ServerState = Depends(state_of),
                       caller: Caller = Depends(caller_of)) -> m.CountTokensResponse:
    """The prompt's length in the model's tokens, as ``/v1/messages`` would render it (system,
    turns, tools through the template or the fallback prompt); nothing runs."""
    served = convert.request_of(body, request.headers, None, state.config, caller.tenant.name)
    state.limiter.admit(caller.tenant)
    version = state.host.resolve_and_hold(served.model)
    try:
        return m.CountTokensResponse(input_tokens=_num_prompt_tokens(version.model, served))
    finally:
        state.host.release(version)


def _num_prompt_tokens(model, served: ServingRequest) -> int:
    prompt = served.prompts[0]
    family = family_of(model.header.tokenizer.chat_template)
    rendered = tool_prompt(prompt.messages or [], served.tools, served.tool_choice, family, served.template_kwargs)
    return len(chat_ids(model.engine.tokenizer, rendered.messages, rendered.template_kwargs, rendered.continuation))


class _MessagesAnswer:
    """A ``Reply`` in Anthropic's wire format: one message, or its stream of events."""

    def __init__(self, reply: Reply, stops) -> None:
        self.reply, self.stops, self.id = reply, tuple(stops), reply.request.request_id
        tokenizer = reply.version.model.engine.tokenizer
        self.decode = lambda ids: tokenizer.decode(list(ids))

    async def whole(self, request: Request) -> m.MessageResponse:
        watcher = asyncio.create_task(cancel_on_disconnect(request, self.reply.generation))
        try:
            results, _ = await self.reply.whole()
        finally:
            watcher.cancel()
        answer = self.reply.generation.tools.parse(results[0].text)
        return render.message(self.id, self.reply.version.key, results[0], answer, self.stops, self.decode,
                              RedactionReport.of(self.reply.redactions()))

    async def stream(self) -> AsyncIterator[bytes]:
        reply = self.reply
        try:
            num_prompt = reply.generation.streams[0].num_prompt_tokens
            yield render.message_start(self.id, reply.version.key, num_prompt)
            yield render.event("ping")
            async for chunk in self._blocks():
                yield chunk
        except MCPError as exc:  # after the 200 went out: the error travels as an event
            await reply.settle_failed(exc)
            yield render.error_event(describe(exc))
        finally:
            reply.finish()  # the client left: recorded as cancelled (a no-op once recorded)

    async def _blocks(self) -> AsyncIterator[bytes]:
        """The text block as it comes (calls held back, as chat completions does), then each
        call's block, then the stop reason; the record committed before the last event."""
        reply, tools = self.reply, self.reply.generation.tools
        held = tools.stream() if tools.active else None
        text_open, result = False, None
        async for event in reply.events():
            text = held.feed(event.text) if held is not None else event.text
            result = event.result or result
            if result is not None and held is not None:
                answer = held.finish()
                text += answer.content or ""
            if text:
                if not text_open:
                    yield render.text_block_start(0)
                    text_open = True
                yield render.text_delta(0, text)
        assert result is not None, "every choice ends with a result"
        answer = held.finish() if held is not None else ParsedAnswer(result.text)
        if text_open:
            yield render.event("content_block_stop", index=0)
        for offset, call in enumerate(answer.tool_calls):
            for chunk in render.tool_use_events(int(text_open) + offset, call):
                yield chunk
        reason, sequence = render.stop_reason(result, answer, self.stops, self.decode)
        await reply.settle()
        for chunk in render.message_end(reason, sequence, result, RedactionReport.of(reply.redactions())):
            yield chunk
