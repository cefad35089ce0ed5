"""The MCP 2026 SDK: ``from mcp.runtime import Session``.

Names are imported lazily (PEP 562) so that lower layers can import
``mcp.base.errors`` without loading the engine and torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from mcp.runtime import moved

moved.install()

_EXPORTS = {
    "Session": "mcp.runtime.session",
    "Model": "mcp.runtime.model",
    "InferResult": "mcp.base.result",
    "Usage": "mcp.base.result",
    "Timings": "mcp.base.result",
    "RuntimeConfig": "mcp.config.runtime",
    "load_config": "mcp.config.runtime",
    "MCPError": "mcp.base.errors",
    "ConfigError": "mcp.base.errors",
    "ModelNotFoundError": "mcp.base.errors",
    "ModelFormatError": "mcp.base.errors",
    "UnsupportedModelError": "mcp.base.errors",
    "InvalidRequestError": "mcp.base.errors",
    "ContextLengthError": "mcp.base.errors",
    "DownloadError": "mcp.base.errors",
    "CapacityError": "mcp.base.errors",
    "PolicyDenied": "mcp.base.errors",
    "EngineError": "mcp.base.errors",
    "RequestCancelled": "mcp.base.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mcp.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def __dir__() -> list[str]:
    return __all__
