"""Hot reload: a thread that watches the routing file and swaps the table atomically.

The current table is one attribute holding an immutable ``RouteTable``; a reload builds the
whole new table first and then rebinds the attribute (one atomic store under the GIL), so
a ``resolve`` sees the old table or the new one, never a mixture. A new file must look the
same on two polls in a row before it is read (a file still being written is left alone);
a file that fails to load is logged and the old table keeps serving. Writers should still
replace the file atomically (write a temporary file, then rename), as Kubernetes ConfigMap
mounts do.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mcp.base.watch import SettledPoller
from mcp.gateway.errors import RoutingConfigError
from mcp.gateway.routing.context import RequestContext, RouteDecision
from mcp.gateway.routing.loader import load_route_table
from mcp.gateway.routing.table import RouteTable

log = logging.getLogger(__name__)
DEFAULT_POLL_S = 1.0


class RouteTableWatcher(SettledPoller):
    """Serves the newest valid table of ``path``; ``start()`` begins polling every ``poll_s``."""

    thread_name = "route-table-watcher"

    def __init__(self, path: str | Path, poll_s: float = DEFAULT_POLL_S) -> None:
        self.path = Path(path)
        self.table: RouteTable = load_route_table(self.path)  # a bad first file is an error
        self.num_reloads = 0
        self.last_error: str | None = None
        super().__init__(poll_s)

    def resolve(self, ctx: RequestContext) -> RouteDecision:
        return self.table.resolve(ctx)

    def __enter__(self) -> RouteTableWatcher:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _reload(self) -> bool:
        try:
            table = load_route_table(self.path)
        except RoutingConfigError as exc:
            self.last_error = str(exc)
            log.error("routing file %s rejected, the previous table keeps serving: %s", self.path, exc)
            return False
        if table.sha256 == self.table.sha256:
            return False
        self.table = table  # the swap: one reference store
        self.num_reloads += 1
        self.last_error = None
        log.info("routing table reloaded from %s (sha256 %s)", self.path, table.sha256[:12])
        return True

    def _stamp(self) -> tuple | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)
