"""``ToolPlan``: a request's tools on the model that runs it (its template family), and how its
answer comes back as calls, whole (``parse``) or streamed (``stream``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp.serving.tools.grammar_hook import validate_arguments
from mcp.serving.tools.parse import ParsedAnswer, call_start, parse_answer
from mcp.serving.tools.prompt import Family
from mcp.serving.tools.spec import Tool, ToolChoice


@dataclass(frozen=True)
class ToolPlan:
    family: Family
    tools: tuple[Tool, ...]
    choice: ToolChoice
    continuation: str = ""  # the start of a forced call, put in the prompt: the answer goes on from it
    parallel: bool = True  # parallel_tool_calls: false keeps the first call only

    @property
    def active(self) -> bool:
        """Answers are parsed for calls (tools offered, and the choice is not none)."""
        return bool(self.tools) and self.choice.mode != "none"

    def parse(self, text: str) -> ParsedAnswer:
        """The answer's text (what followed the continuation) as content and valid calls."""
        if not self.active:
            return ParsedAnswer(text)
        full = self.continuation + text
        answer = parse_answer(full, self.family, {t.name for t in self.tools if self.choice.name in (None, t.name)})
        schemas = {t.name: t.parameters for t in self.tools}
        calls = tuple(c for c in answer.tool_calls if validate_arguments(json.loads(c.arguments), schemas[c.name])
                      is None)
        if not calls:
            return ParsedAnswer(text)
        content = None if self.choice.forced else answer.content  # a forced answer is its call (as a grammar ends it)
        return ParsedAnswer(content, calls if self.parallel else calls[:1])

    def stream(self) -> ToolStream:
        return ToolStream(self)


class ToolStream:
    """A streamed answer split: text goes out as content until a call may start, then is held to
    the end and parsed with what came before the hold (``finish``)."""

    def __init__(self, plan: ToolPlan) -> None:
        self.plan = plan
        self.text = ""  # everything the model wrote
        self.sent = 0  # of it, what went out as content
        self.holding = bool(plan.continuation)

    def feed(self, delta: str) -> str:
        """The content to send now."""
        self.text += delta
        if self.holding:
            return ""
        unsent = self.text[self.sent:]
        if self.plan.family in ("llama3", "mistral"):
            return self._feed_leading(unsent)
        start = call_start(self.plan.family)
        at = unsent.find(start)
        if at >= 0:
            self.holding = True
            return self._send(unsent[:at])
        return self._send(unsent[:len(unsent) - _partial_suffix(unsent, start)])

    def finish(self) -> ParsedAnswer:
        """What was held: content and calls (the content only what was not sent already)."""
        return self.plan.parse(self.text[self.sent:])

    def _feed_leading(self, unsent: str) -> str:
        """Llama 3 and Mistral calls are the whole answer: decided by its first visible character."""
        if self.sent == 0 and not self.text.strip():
            return ""
        if self.sent == 0 and self.text.lstrip()[:1] in ("{", "[", "<"):
            self.holding = True
            return ""
        return self._send(unsent)

    def _send(self, text: str) -> str:
        self.sent += len(text)
        return text


def _partial_suffix(text: str, marker: str) -> int:
    """How many of ``text``'s last characters could be the start of ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0
