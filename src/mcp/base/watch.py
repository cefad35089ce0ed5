"""``SettledPoller``: a thread that polls something on disk and reloads it once a change settles.

Shared by the hot-reloaded routing file (``mcp.gateway.routing.watcher``) and policy bundle
(``mcp.governance.policy.engine``). Each poll takes a stamp of the files (inode, mtime, size);
a new stamp must be seen on two polls in a row before the reload runs, so a file still being
written is left alone. The reload builds the whole new value and swaps it in with one
reference store, or keeps the old one when the new one fails; the thread outlives any error.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Hashable

log = logging.getLogger(__name__)


class SettledPoller(ABC):
    """Subclasses give ``_stamp()`` (what changes when the files do) and ``_reload()``
    (True when a new value was swapped in); ``start()`` polls every ``poll_s`` seconds."""

    thread_name = "mcp-watcher"

    def __init__(self, poll_s: float) -> None:
        self.poll_s = poll_s
        self._seen = self._stamp()
        self._pending: Hashable | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @abstractmethod
    def _stamp(self) -> Hashable:
        """What changes when the watched files do (inode, mtime, size of each)."""

    @abstractmethod
    def _reload(self) -> bool:
        """Read the files again; True when a new value was swapped in, False when kept."""

    def start(self):
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def poll(self) -> bool:
        """Check once; True when a new value was swapped in."""
        stamp = self._stamp()
        if stamp == self._seen:
            self._pending = None
            return False
        if stamp != self._pending:  # changed since the last poll: wait until it holds still
            self._pending = stamp
            return False
        self._seen, self._pending = stamp, None
        return self._reload()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
            except Exception:  # the watcher must outlive any surprise; the old value serves on
                log.exception("%s failed", self.thread_name)
