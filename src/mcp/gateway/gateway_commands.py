"""``mcp2026 gateway`` and ``mcp2026 rollout start|status|promote|abort``; heavy imports happen
only when a command runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_gateway_commands(commands: argparse._SubParsersAction) -> None:
    gateway = commands.add_parser("gateway", help="the routing gateway: pools, fallbacks, canaries (docs/governance.md)")
    gateway.add_argument("--config", type=Path, required=True, help="gateway.yaml: pools, tenants, registry")
    gateway.add_argument("--rules", type=Path, required=True, help="model-routing-config.yaml (hot reloaded)")
    gateway.add_argument("--host", help="address to bind (default gateway.host)")
    gateway.add_argument("--port", type=int, help="port (default gateway.port, 8080)")
    gateway.set_defaults(handler=_gateway)
    _add_rollout_commands(commands)


def _add_rollout_commands(commands: argparse._SubParsersAction) -> None:
    rollout = commands.add_parser("rollout", help="canary rollouts on a split route (docs/governance.md)")
    rollout.add_argument("--registry", dest="registry_url", metavar="URL",
                         help="the registry the gateway uses (default: $MCP_REGISTRY_URL, else $MCP_HOME/registry.db)")
    rollout.add_argument("--actor", help="who is acting (default: user@host)")
    actions = rollout.add_subparsers(title="actions", metavar="ACTION")
    start = actions.add_parser("start", help="start a rollout: the canary arm gets the first step's weight")
    start.add_argument("route", help="a route of the rules file that splits between two arms")
    start.add_argument("--rules", type=Path, required=True, help="the gateway's model-routing-config.yaml")
    start.add_argument("--canary-arm", help="the arm to roll out (default: the arm named canary, else the second)")
    start.add_argument("--steps", default="5,20,50,100", help="canary percents, rising to 100 (default 5,20,50,100)")
    start.add_argument("--hold", type=float, default=60.0, metavar="SECONDS", help="least time per step (default 60)")
    start.add_argument("--min-requests", type=int, default=50, help="canary requests per step before analysis (50)")
    start.add_argument("--max-p95-ms", type=float, default=800.0, help="canary p95 latency bound (default 800)")
    start.add_argument("--max-error-rate", type=float, default=0.002, help="canary error rate bound (default 0.002)")
    start.add_argument("--max-oom", type=int, default=0, help="OOMs allowed (default 0)")
    start.set_defaults(handler=_start)
    status = actions.add_parser("status", help="rollouts, newest first; with an id, its steps and analyses")
    status.add_argument("rollout_id", nargs="?", type=int)
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(handler=_status)
    promote = actions.add_parser("promote", help="move to the next step now (--full: to the end)")
    promote.add_argument("rollout_id", type=int)
    promote.add_argument("--full", action="store_true")
    promote.set_defaults(handler=_promote)
    abort = actions.add_parser("abort", help="stop a rollout: canary weight back to 0")
    abort.add_argument("rollout_id", type=int)
    abort.add_argument("--reason", default="aborted by an operator")
    abort.set_defaults(handler=_abort)


def _gateway(args: argparse.Namespace) -> int:
    from mcp.gateway.http.launch import run_gateway

    return run_gateway(args.config, args.rules, args.host, args.port)


def _store(args: argparse.Namespace):
    from mcp.gateway.canary.store import RolloutStore
    from mcp.gateway.registry.registry import Registry

    return RolloutStore(Registry.open(args.registry_url, actor=args.actor))


def _start(args: argparse.Namespace) -> int:
    from mcp.gateway.canary.plan import plan_for_route
    from mcp.gateway.canary.records import Gates
    from mcp.gateway.errors import RolloutError
    from mcp.gateway.routing.loader import load_route_table

    try:
        steps = tuple(int(step) for step in args.steps.split(","))
    except ValueError:
        raise RolloutError(f"--steps {args.steps!r}: give whole percents separated by commas, e.g. 5,20,50,100") from None
    gates = Gates(args.max_p95_ms, args.max_error_rate, args.max_oom)
    plan = plan_for_route(load_route_table(args.rules), args.route, args.canary_arm, steps, args.hold,
                          args.min_requests, gates)
    store = _store(args)
    try:
        rollout = store.start(plan)
    finally:
        store.registry.close()
    print(f"rollout #{rollout.id} started on route {plan.route}: {plan.canary_arm} ({plan.canary_model}) at "
          f"{rollout.weight}%, steps {','.join(map(str, plan.steps))}")
    return 0


def _status(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        if args.rollout_id is None:
            rollouts, events = store.list(limit=20), None
        else:
            rollouts, events = [store.get(args.rollout_id)], store.events(args.rollout_id)
    finally:
        store.registry.close()
    if args.json:
        records = [r.summary() for r in rollouts]
        if events is not None:
            records[0]["events"] = [e.summary() for e in events]
        print(json.dumps(records if events is None else records[0], indent=2))
        return 0
    for r in rollouts:
        print(f"#{r.id:<4} {r.plan.route:24} {r.status:12} canary {r.plan.canary_arm} ({r.plan.canary_model}) "
              f"{r.weight:3}% step {r.step_index + 1}/{len(r.plan.steps)}  {r.reason or ''}")
    for e in events or ():
        verdict = "" if e.passed is None else (" PASS" if e.passed else " FAIL")
        print(f"  {e.at.isoformat(timespec='seconds')} {e.actor:20} {e.kind:9} {e.weight:3}%{verdict} "
              f"{json.dumps(e.detail, sort_keys=True) if e.detail else ''}")
    return 0


def _promote(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        rollout = store.advance(args.rollout_id, full=args.full, kind="promote")
    finally:
        store.registry.close()
    print(f"rollout #{rollout.id}: {rollout.status}, canary {rollout.weight}%")
    return 0


def _abort(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        rollout = store.roll_back(args.rollout_id, args.reason, kind="abort")
    finally:
        store.registry.close()
    print(f"rollout #{rollout.id}: {rollout.status}, canary {rollout.weight}%")
    return 0
