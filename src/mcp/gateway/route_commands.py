"""``mcp2026 route explain``: which route a request takes, and why."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_route_commands(commands: argparse._SubParsersAction) -> None:
    route = commands.add_parser("route", help="routing rules (docs/governance.md)")
    actions = route.add_subparsers(title="actions", metavar="ACTION")
    explain = actions.add_parser("explain", help="show the route a request takes and which conditions held")
    explain.add_argument("--config", type=Path, required=True, help="a model-routing-config.yaml")
    explain.add_argument("--tenant")
    explain.add_argument("--tokens", type=int, default=0, help="input token count")
    explain.add_argument("--sla", help="SLA class: critical, high, medium, low")
    explain.add_argument("--user", help="user id (sticky split key)")
    explain.add_argument("--tier", help="user tier")
    explain.add_argument("--model", help="the model the request asked for")
    explain.add_argument("--header", action="append", default=[], metavar="NAME=VALUE")
    explain.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    explain.add_argument("--registry", dest="registry_url", metavar="URL",
                         help="resolve name@stage backends through this registry")
    explain.set_defaults(handler=_explain)
    check = actions.add_parser("check", help="validate a routing file")
    check.add_argument("config", type=Path)
    check.set_defaults(handler=_check)


def _explain(args: argparse.Namespace) -> int:
    from mcp.gateway.routing.context import RequestContext
    from mcp.gateway.routing.explain import explain_text
    from mcp.gateway.routing.loader import load_route_table

    table = load_route_table(args.config)
    ctx = RequestContext(tenant=args.tenant, user_id=args.user, user_tier=args.tier, sla_class=args.sla,
                         input_tokens=args.tokens, model=args.model, headers=_pairs(args.header),
                         metadata=_pairs(args.meta))
    if args.registry_url:
        from mcp.gateway.registry.registry import Registry
        from mcp.gateway.routing.stages import StageResolver

        with Registry.open(args.registry_url) as registry:
            print(explain_text(table, ctx, lambda backend: StageResolver(registry).model_id(backend.model)))
    else:
        print(explain_text(table, ctx))
    return 0


def _check(args: argparse.Namespace) -> int:
    from mcp.gateway.routing.loader import load_route_table

    table = load_route_table(args.config)
    print(f"{args.config}: {len(table.routes)} routes and a default, valid")
    return 0


def _pairs(items: list[str]) -> dict[str, str]:
    from mcp.base.errors import InvalidRequestError

    pairs = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals:
            raise InvalidRequestError(f"{item!r}: give NAME=VALUE")
        pairs[key] = value
    return pairs
