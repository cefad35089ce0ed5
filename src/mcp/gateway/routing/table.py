"""The routing table: ordered routes, the first whose conditions all hold wins, else the
default. Frozen and built once per file; ``resolve`` is pure (same table and context, same
decision) and allocates little: no I/O, no locks, no registry look-ups."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.gateway.routing.conditions import Condition
from mcp.gateway.routing.context import Backend, Fallback, RequestContext, RouteDecision
from mcp.gateway.routing.split import Split

DEFAULT_ROUTE = "default"


@dataclass(frozen=True)
class Route:
    name: str
    conditions: tuple[Condition, ...]
    target: Backend | Split
    fallbacks: tuple[Fallback, ...]

    def matches(self, ctx: RequestContext) -> bool:
        for condition in self.conditions:
            if not condition.matches(ctx):
                return False
        return True

    def decide(self, ctx: RequestContext, table_sha256: str, is_default: bool = False) -> RouteDecision:
        if isinstance(self.target, Split):
            arm = self.target.choose(ctx)
            return RouteDecision(self.name, arm.backend, arm.name, self.fallbacks, is_default, table_sha256)
        return RouteDecision(self.name, self.target, None, self.fallbacks, is_default, table_sha256)


@dataclass(frozen=True)
class ConditionResult:
    text: str
    matched: bool


@dataclass(frozen=True)
class RouteExplanation:
    route: str
    matched: bool
    conditions: tuple[ConditionResult, ...]


@dataclass(frozen=True)
class Explanation:
    decision: RouteDecision
    routes: tuple[RouteExplanation, ...]  # every route tried, in order, up to the one taken


@dataclass(frozen=True)
class RouteTable:
    routes: tuple[Route, ...]
    default: Route
    source: str  # the file it came from
    sha256: str  # of the file's bytes: which table made a decision

    def resolve(self, ctx: RequestContext) -> RouteDecision:
        for route in self.routes:
            if route.matches(ctx):
                return route.decide(ctx, self.sha256)
        return self.default.decide(ctx, self.sha256, is_default=True)

    def explain(self, ctx: RequestContext) -> Explanation:
        """``resolve``'s decision with every condition it checked on the way."""
        tried = []
        for route in self.routes:
            results = tuple(ConditionResult(c.describe(ctx), c.matches(ctx)) for c in route.conditions)
            matched = all(r.matched for r in results)
            tried.append(RouteExplanation(route.name, matched, results))
            if matched:
                break
        return Explanation(self.resolve(ctx), tuple(tried))
