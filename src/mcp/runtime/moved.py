"""The SDK's old module paths, kept working: ``mcp.runtime.errors``, ``mcp.runtime.config``, ...

Issue 29 moved the shared ground (errors, argument checks, result types) down to ``mcp.base`` and
the ``mcp-config.yaml`` schema to ``mcp.config``; docs and users import them by their old paths.
Importing an old path gives the moved module itself (the same object, so the same classes). The
SDK sits above both floors, so these names point down, never up. rewrite_imports: skip
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {
    "mcp.runtime.errors": "mcp.base.errors",
    "mcp.runtime.arguments": "mcp.base.arguments",
    "mcp.runtime.result": "mcp.base.result",
    "mcp.runtime.watch": "mcp.base.watch",
    "mcp.runtime.config": "mcp.config.runtime",
    "mcp.runtime.serving_config": "mcp.config.serving",
    "mcp.runtime.isolation_config": "mcp.config.isolation",
    "mcp.runtime.signing_config": "mcp.config.signing",
    "mcp.runtime.attestation_config": "mcp.config.attestation",
    "mcp.runtime.paths": "mcp.config.model_path",
}


class OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path in ``MOVED`` and loads it as the module at its new path."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module) -> None:
        """Nothing to run: ``create_module`` returned the moved module, already executed."""


def install() -> None:
    """Once per process, ahead of the path finders (no file is left at an old path)."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())
