"""``POST /v1/responses``: OpenAI's Responses API, stateless, on the host's models.

The body is converted once into the typed ``ServingRequest`` (``responses_convert.py``) and
runs the lifecycle chat completions run (``serving/reply.py``: tenant rate limit, governance
input check, admission, output policy, one audit record, release), so SLO classes, tenants,
rate limits, governance, audit and metrics apply alike. The answer is one response object
(``responses_render.py``) or the Responses API's server-sent events (``responses_stream.py``).
Nothing is stored: ``store: true``, ``previous_response_id``, ``conversation``, ``background``
and stored ``prompt`` templates are a 400 saying so.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request, Response

from mcp.serving.http import responses_convert as convert
from mcp.serving.http import responses_render as render
from mcp.serving.http import responses_schema as r
from mcp.serving.http import responses_wire as w
from mcp.serving.http.auth import caller_of, state_of
from mcp.serving.http.fields import IGNORED_HEADER
from mcp.serving.http.schemas import RedactionReport
from mcp.serving.http.openai_api import ERRORS, SLA_CLASS, FinishingStream, cancel_on_disconnect, stream_headers
from mcp.serving.http.responses_stream import ResponseStream
from mcp.serving.redactions import redactions_header
from mcp.serving.reply import Reply
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller
from mcp.serving.tools.parse import ParsedAnswer

router = APIRouter(tags=["openai"])
# One server-sent event of a streamed response: `event` is its type, `data` its JSON (an event
# of responses_wire.StreamEvent); the stream ends with response.completed, .incomplete or .failed.
STREAM = {"text/event-stream": {"schema": {
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"type": "string"},
                   "data": {"type": "string", "contentMediaType": "application/json",
                            "description": "the event as JSON, its `type` the same as `event`"},
                   "id": {"type": "string"}, "retry": {"type": "integer"}}}}}


@router.post("/v1/responses", response_model=w.ResponseObject, responses={**ERRORS, 200: {"content": STREAM}})
async def create_response(body: r.ResponseCreateRequest, request: Request, response: Response,
                          x_sla_class: str | None = SLA_CLASS, state: ServerState = Depends(state_of),
                          caller: Caller = Depends(caller_of)):
    served = convert.request_of(body, request.headers, x_sla_class, state.config, caller.tenant.name)
    state.limiter.admit(caller.tenant)
    if state.fault_delay_s:  # the injected delay of $MCP_FAULT_DELAY_MS (a test and chaos knob)
        await asyncio.sleep(state.fault_delay_s)
    reply = await Reply.start(state, caller.tenant, served)
    echo = render.Echo.of(served.request_id, reply.version.key, body)
    ignored = {IGNORED_HEADER: ", ".join(served.ignored_fields)} if served.ignored_fields else {}
    if body.stream:
        return FinishingStream(ResponseStream(reply, echo).events(), reply.finish, media_type="text/event-stream",
                                headers=stream_headers(reply, ignored))
    response.headers.update(ignored)
    try:
        whole = await _whole(request, reply, echo)
    finally:
        reply.finish()
    response.headers.update(redactions_header(reply.redactions()))
    return whole


async def _whole(request: Request, reply: Reply, echo: render.Echo) -> w.ResponseObject:
    watcher = asyncio.create_task(cancel_on_disconnect(request, reply.generation))
    try:
        results, _ = await reply.whole()
    finally:
        watcher.cancel()
    result, tools = results[0], reply.generation.tools
    answer = tools.parse(result.text) if tools.active else ParsedAnswer(result.text)
    return render.whole(echo, result, answer).model_copy(
        update={"mcp_redactions": RedactionReport.of(reply.redactions())})
