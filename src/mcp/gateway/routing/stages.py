"""Resolve ``name@stage`` backends through the registry, outside the hot path.

``RouteTable.resolve`` stays pure: it returns ``ModelRef``s as written. The gateway turns a
stage into the version the registry holds in that stage with a ``StageResolver``, which
caches each answer for ``ttl_s`` seconds so a promotion is seen within that time.
"""

from __future__ import annotations

import threading
import time

from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage
from mcp.gateway.routing.context import ModelRef


class StageResolver:
    def __init__(self, registry: Registry, ttl_s: float = 5.0) -> None:
        self.registry = registry
        self.ttl_s = ttl_s
        self._cache: dict[tuple[str, str], tuple[float, str]] = {}
        self._lock = threading.Lock()

    def model_id(self, ref: ModelRef) -> str:
        """``name:version`` for ``ref``; a stage is looked up (``UnknownVersionError`` if empty)."""
        if ref.version is not None:
            return f"{ref.name}:{ref.version}"
        key = (ref.name, ref.stage or "")
        with self._lock:
            cached = self._cache.get(key)
        if cached and time.monotonic() - cached[0] < self.ttl_s:
            return cached[1]
        model_id = self.registry.in_stage(ref.name, Stage(ref.stage)).model_id
        with self._lock:
            self._cache[key] = (time.monotonic(), model_id)
        return model_id
