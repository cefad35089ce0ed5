"""Routing rules: ``load_route_table(path)`` -> ``RouteTable``; ``table.resolve(ctx)`` ->
``RouteDecision``; ``RouteTableWatcher`` reloads on change. File format: docs/governance.md."""

from mcp.gateway.routing.context import Backend, Fallback, ModelRef, RequestContext, RouteDecision
from mcp.gateway.routing.loader import load_route_table, parse_route_table
from mcp.gateway.routing.table import RouteTable
from mcp.gateway.routing.watcher import RouteTableWatcher

__all__ = ["Backend", "Fallback", "ModelRef", "RequestContext", "RouteDecision", "RouteTable",
           "RouteTableWatcher", "load_route_table", "parse_route_table"]
