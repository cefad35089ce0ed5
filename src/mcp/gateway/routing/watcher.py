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
import threading
from pathlib import Path

from mcp.gateway.errors import RoutingConfigError
from mcp.gateway.routing.context import RequestContext, RouteDecision
from mcp.gateway.routing.loader import load_route_table
from mcp.gateway.routing.table import RouteTable

log = logging.getLogger(__name__)
DEFAULT_POLL_S = 1.0


class RouteTableWatcher:
    """Serves the newest valid table of ``path``; ``start()`` begins polling every ``poll_s``."""

    def __init__(self, path: str | Path, poll_s: float = DEFAULT_POLL_S) -> None:
        self.path = Path(path)
        self.poll_s = poll_s
        self.table: RouteTable = load_route_table(self.path)  # a bad first file is an error
        self.num_reloads = 0
        self.last_error: str | None = None
        self._seen = self._stamp()
        self._pending: tuple | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def resolve(self, ctx: RequestContext) -> RouteDecision:
        return self.table.resolve(ctx)

    def start(self) -> RouteTableWatcher:
        self._thread = threading.Thread(target=self._run, name="route-table-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> RouteTableWatcher:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def poll(self) -> bool:
        """Check the file once; True when a new table was swapped in."""
        stamp = self._stamp()
        if stamp == self._seen:
            self._pending = None
            return False
        if stamp != self._pending:  # changed since the last poll: wait until it holds still
            self._pending = stamp
            return False
        self._seen, self._pending = stamp, None
        return self._reload()

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

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
            except Exception:  # the watcher must outlive any surprise; the old table serves on
                log.exception("routing file watcher failed on %s", self.path)
