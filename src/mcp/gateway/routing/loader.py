"""Read a routing file: YAML -> pydantic (``schema.py``) -> frozen ``RouteTable``, once.

Every problem is one ``RoutingConfigError`` listing each error with the route's name and
the field, e.g. ``route 'premium' (routes[1]): split: arm weights must sum to 100 ...``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mcp.gateway.errors import RoutingConfigError
from mcp.gateway.routing.conditions import Condition, EntryMatch, OneOf, TokenRange, ValueSet
from mcp.gateway.routing.context import Backend, Fallback, ModelRef
from mcp.gateway.routing.schema import BackendSpec, ConditionsSpec, RoutingFile, _TargetSpec, parse_model_id
from mcp.gateway.routing.split import Arm, Split, arm_bounds
from mcp.gateway.routing.table import DEFAULT_ROUTE, Route, RouteTable


def load_route_table(path: str | Path) -> RouteTable:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RoutingConfigError(f"routing file {path} cannot be read: {exc}") from None
    return parse_route_table(data, source=str(path))


def parse_route_table(data: bytes | str, source: str = "<routing>") -> RouteTable:
    raw = data.encode() if isinstance(data, str) else data
    try:
        document = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise RoutingConfigError(f"{source} is not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise RoutingConfigError(f"{source}: a routing file is a mapping with routes: and default:")
    try:
        spec = RoutingFile.model_validate(document)
    except ValidationError as exc:
        raise RoutingConfigError(_describe(source, exc, document)) from None
    return _table(spec, source, hashlib.sha256(raw).hexdigest())


def _describe(source: str, exc: ValidationError, document: dict[str, Any]) -> str:
    lines = [f"{source}: {exc.error_count()} error(s) in the routing file"]
    for error in exc.errors():
        lines.append(f"  {_where(error['loc'], document)}: {error['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def _where(loc: tuple, document: dict[str, Any]) -> str:
    if len(loc) >= 2 and loc[0] == "routes" and isinstance(loc[1], int):
        routes = document.get("routes") or []
        entry = routes[loc[1]] if loc[1] < len(routes) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        head = f"route {name!r} (routes[{loc[1]}])" if name else f"routes[{loc[1]}]"
        rest = loc[2:]
    elif loc and loc[0] == "default":
        head, rest = "default route", loc[1:]
    else:
        head, rest = "file", loc
    field = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in rest).replace(".[", "[")
    return f"{head}: {field}" if field else head


def _table(spec: RoutingFile, source: str, sha256: str) -> RouteTable:
    routes = tuple(_route(r.name, r, _conditions(r.conditions)) for r in spec.routes)
    return RouteTable(routes, _route(DEFAULT_ROUTE, spec.default, ()), source, sha256)


def _route(name: str, spec: _TargetSpec, conditions: tuple[Condition, ...]) -> Route:
    target = _backend(spec.backend) if spec.backend is not None else _split(name, spec.split)
    fallbacks = tuple(Fallback(frozenset(f.when), _backend(f.backend)) for f in spec.fallbacks)
    return Route(name, conditions, target, fallbacks)


def _backend(spec: BackendSpec) -> Backend:
    return Backend(ModelRef(*parse_model_id(spec.model_id)), spec.instance_pool, spec.timeout_ms)


def _split(route: str, spec) -> Split:
    bounds = arm_bounds([arm.weight for arm in spec.arms])
    arms = tuple(Arm(a.name, a.weight, _backend(a.backend), end) for a, end in zip(spec.arms, bounds))
    return Split(arms, spec.sticky_by, spec.salt or route)


def _conditions(spec: ConditionsSpec) -> tuple[Condition, ...]:
    """Cheapest checks first: token range, then exact fields, then header/metadata maps."""
    found: list[Condition] = []
    if spec.min_input_tokens is not None or spec.max_input_tokens is not None:
        found.append(TokenRange(spec.min_input_tokens, spec.max_input_tokens))
    for field in ("tenant", "user_tier", "sla_class", "model"):
        values = getattr(spec, field)
        if values is not None:
            found.append(OneOf(field, ValueSet.of(values)))
    for source in ("headers", "metadata"):
        for key, values in getattr(spec, source).items():
            found.append(EntryMatch(source, key.lower() if source == "headers" else key, ValueSet.of(values)))
    return tuple(found)
