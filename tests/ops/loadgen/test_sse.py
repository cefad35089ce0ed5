"""Server-sent event parsing, as OpenAI-compatible servers frame their streams."""

from __future__ import annotations

from mcp.ops.loadgen.sse import iter_sse_data


def test_events_comments_and_multiline_data():
    lines = [": keep-alive", "", 'data: {"a": 1}', "", "event: message", "data:{\"b\": 2}", "", "data: x",
             "data: y", "id: 3", "", "data: [DONE]", ""]
    assert list(iter_sse_data(lines)) == ['{"a": 1}', '{"b": 2}', "x\ny", "[DONE]"]


def test_crlf_endings_and_a_last_event_without_blank_line():
    assert list(iter_sse_data(["data: one\r\n", "\r\n", "data: two\r\n"])) == ["one", "two"]
