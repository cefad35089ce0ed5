"""``mcp2026 route explain``'s text: the route taken and every condition checked on the way."""

from __future__ import annotations

from collections.abc import Callable

from mcp.gateway.routing.context import Backend, RequestContext
from mcp.gateway.routing.split import Split
from mcp.gateway.routing.table import Explanation, RouteTable


def explain_text(table: RouteTable, ctx: RequestContext,
                 model_id: Callable[[Backend], str] | None = None) -> str:
    explanation = table.explain(ctx)
    lines = [f"table {table.source} (sha256 {table.sha256[:12]})"]
    lines += _tried(explanation)
    decision = explanation.decision
    if decision.is_default:
        lines.append("no route matched: the default route is taken")
    lines.append(f"route: {decision.route}")
    route = table.default if decision.is_default else next(r for r in table.routes if r.name == decision.route)
    if isinstance(route.target, Split):
        split = route.target
        lines.append(f"split by {split.sticky_by}: bucket {split.bucket(ctx)} of 10000 -> arm {decision.arm} "
                     f"({', '.join(f'{a.name} {a.weight:g}% < {a.end_bucket}' for a in split.arms)})")
    lines.append(f"backend: {_backend(decision.backend, model_id)}")
    for fallback in decision.fallbacks:
        lines.append(f"fallback on {', '.join(sorted(fallback.on))}: {_backend(fallback.backend, model_id)}")
    return "\n".join(lines)


def _tried(explanation: Explanation) -> list[str]:
    lines = []
    for route in explanation.routes:
        lines.append(f"route {route.route}: {'MATCH' if route.matched else 'no match'}")
        if not route.conditions:
            lines.append("  (no conditions)")
        for result in route.conditions:
            lines.append(f"  [{'ok' if result.matched else 'FAIL'}] {result.text}")
    return lines


def _backend(backend: Backend, model_id: Callable[[Backend], str] | None) -> str:
    model = str(backend.model)
    if model_id is not None and backend.model.version is None:
        model = f"{model} = {model_id(backend)}"
    return f"model {model}, pool {backend.instance_pool}, timeout {backend.timeout_ms} ms"
