"""Route conditions: each tests one fact of a ``RequestContext`` and can say why it did or
did not match. ``resolve`` calls ``matches``; ``explain`` calls ``describe``: one code path."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from mcp.gateway.routing.context import RequestContext

_GLOB = set("*?[")


@dataclass(frozen=True)
class ValueSet:
    """Accepted values: exact strings in a set, globs (``eu-*``) tried one by one."""

    values: tuple[str, ...]
    exact: frozenset[str]
    patterns: tuple[str, ...]

    @classmethod
    def of(cls, values: list[str] | tuple[str, ...]) -> ValueSet:
        patterns = tuple(v for v in values if _GLOB & set(v))
        return cls(tuple(values), frozenset(v for v in values if v not in patterns), patterns)

    def contains(self, actual: str | None) -> bool:
        if actual is None:
            return False
        return actual in self.exact or any(fnmatchcase(actual, p) for p in self.patterns)

    def __str__(self) -> str:
        return f"[{', '.join(self.values)}]"


@dataclass(frozen=True)
class OneOf:
    """``ctx.<field>`` is one of ``values`` (exact, or a glob such as ``eu-*``)."""

    field: str  # tenant | user_tier | sla_class | model
    values: ValueSet

    def matches(self, ctx: RequestContext) -> bool:
        return self.values.contains(getattr(ctx, self.field))

    def describe(self, ctx: RequestContext) -> str:
        verb = "in" if self.matches(ctx) else "not in"
        return f"{self.field} {getattr(ctx, self.field)!r} {verb} {self.values}"


@dataclass(frozen=True)
class TokenRange:
    """``min_tokens <= ctx.input_tokens <= max_tokens`` (either bound may be open)."""

    min_tokens: int | None
    max_tokens: int | None

    def matches(self, ctx: RequestContext) -> bool:
        low_ok = self.min_tokens is None or ctx.input_tokens >= self.min_tokens
        return low_ok and (self.max_tokens is None or ctx.input_tokens <= self.max_tokens)

    def describe(self, ctx: RequestContext) -> str:
        low = "" if self.min_tokens is None else f"{self.min_tokens} <= "
        high = "" if self.max_tokens is None else f" <= {self.max_tokens}"
        verb = "holds" if self.matches(ctx) else "fails"
        return f"input tokens {low}{ctx.input_tokens}{high} {verb}"


@dataclass(frozen=True)
class EntryMatch:
    """``ctx.headers[key]`` or ``ctx.metadata[key]`` is one of ``values`` (exact or glob)."""

    source: str  # headers | metadata
    key: str
    values: ValueSet

    def matches(self, ctx: RequestContext) -> bool:
        return self.values.contains(getattr(ctx, self.source).get(self.key))

    def describe(self, ctx: RequestContext) -> str:
        actual = getattr(ctx, self.source).get(self.key)
        verb = "in" if self.matches(ctx) else "not in"
        return f"{self.source}[{self.key}] {actual!r} {verb} {self.values}"


Condition = OneOf | TokenRange | EntryMatch

