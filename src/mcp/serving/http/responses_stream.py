"""A streamed ``POST /v1/responses``: the reply's events as the Responses API's server-sent events.

Text goes out as ``response.output_text.delta`` events of one ``message`` item, opened at the
first text. When the request offers tools, text that may start a call is held (the same
``ToolStream`` chat's tool deltas use) and, at the end, each parsed call goes out as a
``function_call`` item with its arguments in one delta. The event order is in
``responses_wire.py``; the audit record is committed before the last event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from mcp.base.errors import MCPError
from mcp.base.result import InferResult
from mcp.serving.errors import describe
from mcp.serving.http import responses_render as render
from mcp.serving.http import responses_wire as w
from mcp.serving.http.schemas import RedactionReport
from mcp.serving.reply import Reply
from mcp.serving.tools.spec import ToolCall


class ResponseStream:
    """One reply (one choice) as numbered Responses API events."""

    def __init__(self, reply: Reply, echo: render.Echo) -> None:
        self.reply, self.echo = reply, echo
        tools = reply.generation.tools
        self.tool_stream = tools.stream() if tools.active else None
        self.output: list[w.OutputMessage | w.OutputFunctionCall] = []  # finished items
        self.message_id: str | None = None  # the open message item
        self.text = ""
        self.number = 0

    async def events(self) -> AsyncIterator[bytes]:
        try:
            yield self._event(w.LifecycleEvent, type="response.created", response=self._progress())
            yield self._event(w.LifecycleEvent, type="response.in_progress", response=self._progress())
            final = None
            async for event in self.reply.events():
                text = self.tool_stream.feed(event.text) if self.tool_stream is not None else event.text
                for chunk in self._text(text):
                    yield chunk
                if event.result is not None:
                    for chunk in self._end(event.result):
                        yield chunk
                    final = event.result
            await self.reply.settle()  # committed before the stream completes
            yield self._last(final)
        except MCPError as exc:  # after the 200 went out: the error travels as events
            await self.reply.settle_failed(exc)
            wire = describe(exc)
            yield self._event(w.ErrorEvent, code=wire.code, message=wire.message, param=wire.param)
            error = w.ResponseError(code="server_error", message=wire.message)
            yield self._event(w.LifecycleEvent, type="response.failed",
                              response=self.echo.response("failed", self.output, error=error))
        finally:
            self.reply.finish()  # the client left: recorded as cancelled (a no-op once recorded)

    def _event(self, kind: type[w._Event], **fields) -> bytes:
        event = kind(sequence_number=self.number, **fields)
        self.number += 1
        return w.sse(event)  # type: ignore[arg-type]

    def _progress(self) -> w.ResponseObject:
        return self.echo.response("in_progress", list(self.output))

    def _text(self, text: str) -> Iterator[bytes]:
        if not text:
            return
        if self.message_id is None:
            yield from self._open_message()
        self.text += text
        yield self._event(w.TextDeltaEvent, item_id=self.message_id, output_index=len(self.output), delta=text)

    def _open_message(self) -> Iterator[bytes]:
        self.message_id = render.item_id("msg")
        index = len(self.output)
        yield self._event(w.OutputItemEvent, type="response.output_item.added", output_index=index,
                          item=w.OutputMessage(id=self.message_id, status="in_progress", content=[]))
        yield self._event(w.ContentPartEvent, type="response.content_part.added", item_id=self.message_id,
                          output_index=index, part=w.OutputText(text=""))

    def _end(self, result: InferResult) -> Iterator[bytes]:
        """The choice ended: the rest of its text, its message closed, its calls."""
        answer = self.tool_stream.finish() if self.tool_stream is not None else None
        if answer is not None:
            yield from self._text(answer.content or "")
        status, _ = render.status_of(result, answer)
        calls = answer.tool_calls if answer is not None else ()
        if self.message_id is None and not calls:
            yield from self._open_message()  # an empty answer is still a message
        if self.message_id is not None:
            yield from self._close_message("completed" if status == "completed" else "incomplete")
        for call in calls:
            yield from self._call(call)

    def _close_message(self, status: w.Status) -> Iterator[bytes]:
        index, item_id = len(self.output), self.message_id
        assert item_id is not None, "a message is open"
        yield self._event(w.TextDoneEvent, item_id=item_id, output_index=index, text=self.text)
        yield self._event(w.ContentPartEvent, type="response.content_part.done", item_id=item_id,
                          output_index=index, part=w.OutputText(text=self.text))
        item = render.message_item(item_id, self.text, status)
        yield self._event(w.OutputItemEvent, type="response.output_item.done", output_index=index, item=item)
        self.output.append(item)

    def _call(self, call: ToolCall) -> Iterator[bytes]:
        index, item = len(self.output), render.call_item(call)
        yield self._event(w.OutputItemEvent, type="response.output_item.added", output_index=index,
                          item=render.call_item(call, "in_progress", arguments=""))
        yield self._event(w.ArgumentsDeltaEvent, item_id=item.id, output_index=index, delta=call.arguments)
        yield self._event(w.ArgumentsDoneEvent, item_id=item.id, output_index=index, arguments=call.arguments)
        yield self._event(w.OutputItemEvent, type="response.output_item.done", output_index=index, item=item)
        self.output.append(item)

    def _last(self, result: InferResult | None) -> bytes:
        called = any(isinstance(item, w.OutputFunctionCall) for item in self.output)
        status, incomplete = ("completed", None) if called else render.status_of(result, None)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        response = self.echo.response(status, self.output, result=result, incomplete=incomplete)
        report = RedactionReport.of(self.reply.redactions())  # what governance redacted in the whole request
        return self._event(w.LifecycleEvent, type=kind, response=response.model_copy(update={"mcp_redactions": report}))
