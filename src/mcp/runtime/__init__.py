"""The MCP 2026 SDK: ``from mcp.runtime import Session``.

Names are imported lazily (PEP 562) so that lower layers can import
``mcp.runtime.errors`` without loading the engine and torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Session": "mcp.runtime.session",
    "Model": "mcp.runtime.model",
    "InferResult": "mcp.runtime.result",
    "Usage": "mcp.runtime.result",
    "Timings": "mcp.runtime.result",
    "RuntimeConfig": "mcp.runtime.config",
    "load_config": "mcp.runtime.config",
    "MCPError": "mcp.runtime.errors",
    "ConfigError": "mcp.runtime.errors",
    "ModelNotFoundError": "mcp.runtime.errors",
    "ModelFormatError": "mcp.runtime.errors",
    "UnsupportedModelError": "mcp.runtime.errors",
    "InvalidRequestError": "mcp.runtime.errors",
    "ContextLengthError": "mcp.runtime.errors",
    "DownloadError": "mcp.runtime.errors",
    "CapacityError": "mcp.runtime.errors",
    "PolicyDenied": "mcp.runtime.errors",
    "EngineError": "mcp.runtime.errors",
    "RequestCancelled": "mcp.runtime.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mcp.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def __dir__() -> list[str]:
    return __all__
