"""What Argo Rollouts does with a web metric of an AnalysisTemplate, for the subset we use.

- ``jsonPath`` (Kubernetes JSONPath, as ``provider.web.jsonPath``): ``{$}``, ``{$.a.b}`` or
  ``{.a.b}``; the match is the JSON value itself (an object stays an object), as the web
  provider hands one match to the conditions.
- ``successCondition`` / ``failureCondition``: expr-lang expressions over ``result``. Supported:
  ``result`` and member access (``result.value``), numbers, ``true``/``false``, ``==``,
  ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``&&``/``and``, ``||``/``or``, ``!``/``not`` and
  parentheses. Anything else is an error, never a guess. A missing field is an error too.
- One measurement's phase follows Argo's ``EvaluateResult``: a true failure condition is
  Failed; with only a success condition, false is Failed; with only a failure condition, false
  is Successful; with both and neither true, Inconclusive.
- A metric's phase over its measurements: Failed when failures exceed ``failureLimit``
  (default 0), Inconclusive when inconclusives exceed ``inconclusiveLimit`` (default 0),
  else Successful.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

SUCCESSFUL, FAILED, INCONCLUSIVE = "Successful", "Failed", "Inconclusive"
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(&&|\|\||==|!=|<=|>=|<|>|!|\(|\)|\.)|([A-Za-z_]\w*))")


def json_path(expression: str, document: Any) -> Any:
    match = re.fullmatch(r"\{\$?((?:\.\w+)*)\}", expression.strip())
    if match is None:
        raise ValueError(f"jsonPath {expression!r} is outside the supported subset {{$}}, {{$.a.b}}, {{.a.b}}")
    value = document
    for key in filter(None, match.group(1).split(".")):
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"jsonPath {expression!r}: {key!r} is not in {value!r}")
        value = value[key]
    return value


def _tokens(text: str) -> list[str]:
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"condition {text!r}: cannot read {text[position:]!r}")
        tokens.append(match.group(match.lastindex))
        position = match.end()
    return tokens


class _Parser:
    """Recursive descent: or -> and -> not -> comparison -> operand (precedence as in expr)."""

    def __init__(self, text: str, result: Any) -> None:
        self.text, self.tokens, self.at, self.result = text, _tokens(text), 0, result

    def parse(self) -> Any:
        value = self._or()
        if self.at != len(self.tokens):
            raise ValueError(f"condition {self.text!r}: unexpected {self.tokens[self.at]!r}")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise ValueError(f"condition {self.text!r} ends too early")
        self.at += 1
        return token

    def _or(self) -> Any:
        value = self._and()
        while self._peek() in ("||", "or"):
            self._take()
            right = self._and()
            value = _boolean(value, self.text) or _boolean(right, self.text)
        return value

    def _and(self) -> Any:
        value = self._not()
        while self._peek() in ("&&", "and"):
            self._take()
            right = self._not()
            value = _boolean(value, self.text) and _boolean(right, self.text)
        return value

    def _not(self) -> Any:
        if self._peek() in ("!", "not"):
            self._take()
            return not _boolean(self._not(), self.text)
        return self._comparison()

    def _comparison(self) -> Any:
        left = self._operand()
        if self._peek() in ("==", "!=", "<", "<=", ">", ">="):
            operator, right = self._take(), self._operand()
            return _compare(operator, left, right, self.text)
        return left

    def _operand(self) -> Any:
        token = self._take()
        if token == "(":
            value = self._or()
            if self._take() != ")":
                raise ValueError(f"condition {self.text!r}: a '(' is not closed")
            return value
        if token[0].isdigit():
            return float(token)
        if token in ("true", "false"):
            return token == "true"
        if token != "result":
            raise ValueError(f"condition {self.text!r}: unknown name {token!r} (only result)")
        value = self.result
        while self._peek() == ".":
            self._take()
            key = self._take()
            if not isinstance(value, dict) or key not in value:
                raise ValueError(f"condition {self.text!r}: result has no field {key!r}")
            value = value[key]
        return value


def _boolean(value: Any, text: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"condition {text!r}: {value!r} is not a boolean")
    return value


def _compare(operator: str, left: Any, right: Any, text: str) -> bool:
    if operator in ("==", "!="):
        return (left == right) == (operator == "==")
    if isinstance(left, bool) or isinstance(right, bool) or not all(isinstance(v, int | float) for v in (left, right)):
        raise ValueError(f"condition {text!r}: {left!r} {operator} {right!r} compares non-numbers")
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[operator]


def condition(text: str, result: Any) -> bool:
    return _boolean(_Parser(text, result).parse(), text)


def measure(metric: dict, document: Any) -> str:
    """One measurement's phase: the metric's jsonPath on the response, then its conditions."""
    result = json_path(metric["provider"]["web"]["jsonPath"], document)
    success, failure = metric.get("successCondition"), metric.get("failureCondition")
    succeeded = condition(success, result) if success else None
    failed = condition(failure, result) if failure else None
    if success is None and failure is None:
        return SUCCESSFUL
    if failed is None:
        failed = not succeeded
    if succeeded is None:
        succeeded = not failed
    if failed:
        return FAILED
    return SUCCESSFUL if succeeded else INCONCLUSIVE


def metric_phase(metric: dict, phases: Iterable[str]) -> str:
    phases = list(phases)
    if phases.count(FAILED) > metric.get("failureLimit", 0):
        return FAILED
    if phases.count(INCONCLUSIVE) > metric.get("inconclusiveLimit", 0):
        return INCONCLUSIVE
    return SUCCESSFUL


def render_url(template: dict, metric: dict, args: dict[str, str]) -> str:
    """The metric's URL with ``{{args.NAME}}`` filled from ``args`` over the template's defaults."""
    values = {arg["name"]: arg["value"] for arg in template["spec"].get("args", []) if "value" in arg} | args

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            raise ValueError(f"argument {name!r} has no value")
        return values[name]

    return re.sub(r"\{\{\s*args\.([\w-]+)\s*\}\}", fill, metric["provider"]["web"]["url"])
