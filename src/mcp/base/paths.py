"""Where MCP 2026 keeps its files on this machine.

The model cache, keys, the registry and the audit database all default to places under one
folder; it lives here, on the ground floor, because the compiler, governance and the gateway
all need it and none of them may import the others for it.
"""

from __future__ import annotations

import os
from pathlib import Path


def mcp_home() -> Path:
    """The model cache: ``$MCP_HOME``, else ``~/.cache/mcp2026``."""
    return Path(os.environ.get("MCP_HOME") or Path.home() / ".cache" / "mcp2026")
