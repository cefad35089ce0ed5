"""A parser for protobuf's text format, enough for Triton's ``config.pbtxt``.

No schema: every field becomes a list of values (a field may repeat), a value is a
string, a number, a bare identifier (enum or bool), or a nested message (a dict of the
same kind). ``name: "x"``, ``dims: [ 1, 2 ]``, ``input [ { ... }, { ... } ]``,
``parameters { key: "k" value: { string_value: "v" } }``, ``#`` comments, ``<...>``
message brackets and ``,``/``;`` separators are all accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp.base.errors import ModelFormatError

Message = dict[str, list]
_TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}\[\]<>:,;])
  | (?P<word>[^\s{}\[\]<>:,;\#"']+)
""", re.VERBOSE)
_CLOSE = {"{": "}", "<": ">"}


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    line: int


def parse_pbtxt(text: str, source: str = "<pbtxt>") -> Message:
    """Parse ``text``; a syntax error is a ``ModelFormatError`` naming ``source`` and the line."""
    parser = _Parser(_tokens(text, source), source)
    message = parser.message(end=None)
    return message


def _tokens(text: str, source: str) -> list[_Token]:
    tokens, position, line = [], 0, 1
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ModelFormatError(f"{source}:{line}: unexpected character {text[position]!r}")
        if match.lastgroup != "space":
            tokens.append(_Token(match.lastgroup, match.group(), line))
        line += match.group().count("\n")
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[_Token], source: str) -> None:
        self.tokens, self.source, self.index = tokens, source, 0

    def message(self, end: str | None) -> Message:
        fields: Message = {}
        while not self._at(end):
            name = self._take("word")
            fields.setdefault(name.text, []).extend(self._field_values(name))
            if self._peek_text() in (",", ";"):
                self.index += 1
        if end is not None:
            self.index += 1
        return fields

    def _field_values(self, name: _Token) -> list:
        colon = self._peek_text() == ":"
        if colon:
            self.index += 1
        if self._peek_text() == "[":
            self.index += 1
            return self._list()
        if self._peek_text() in _CLOSE:
            return [self._nested()]
        if not colon:
            self._fail(f"field {name.text} needs ':' or a '{{' message")
        return [self._scalar()]

    def _list(self) -> list:
        values = []
        while self._peek_text() != "]":
            if self._peek_text() is None:
                self._fail("missing ']'")
            values.append(self._nested() if self._peek_text() in _CLOSE else self._scalar())
            if self._peek_text() == ",":
                self.index += 1
            elif self._peek_text() not in ("]", None):
                self._fail("expected ',' or ']' in a list")
        self.index += 1
        return values

    def _nested(self) -> Message:
        opening = self.tokens[self.index].text
        self.index += 1
        return self.message(end=_CLOSE[opening])

    def _scalar(self):
        token = self._next()
        if token.kind == "string":
            return bytes(token.text[1:-1], "utf-8").decode("unicode_escape")
        if token.kind != "word":
            self._fail(f"expected a value, found {token.text!r}", token)
        return _number(token.text)

    def _at(self, end: str | None) -> bool:
        if self.index >= len(self.tokens):
            if end is not None:
                self._fail(f"missing {end!r}")
            return True
        return self.tokens[self.index].text == end

    def _peek_text(self) -> str | None:
        return self.tokens[self.index].text if self.index < len(self.tokens) else None

    def _next(self) -> _Token:
        if self.index >= len(self.tokens):
            self._fail("unexpected end of file")
        token = self.tokens[self.index]
        self.index += 1
        return token

    def _take(self, kind: str) -> _Token:
        token = self._next()
        if token.kind != kind:
            self._fail(f"expected a field name, found {token.text!r}", token)
        return token

    def _fail(self, message: str, token: _Token | None = None):
        token = token or (self.tokens[min(self.index, len(self.tokens) - 1)] if self.tokens else None)
        raise ModelFormatError(f"{self.source}:{token.line if token else 1}: {message}")


def _number(text: str):
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)
