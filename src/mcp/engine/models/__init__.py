"""Model architectures, looked up by the family name in the ``.mcp`` header."""

from __future__ import annotations

import importlib

from mcp.base.errors import UnsupportedModelError

# family -> (module, class); imported lazily, only the family a file names
_REGISTRY = {
    "llama": ("mcp.engine.models.llama", "LlamaForCausalLM"),
    "gemma3": ("mcp.engine.models.gemma3", "Gemma3ForCausalLM"),
}
SUPPORTED_ARCHITECTURES = tuple(_REGISTRY)


def model_class(architecture: str) -> type:
    """The module class for an architecture family; imported lazily."""
    if architecture not in _REGISTRY:
        raise UnsupportedModelError(
            f"architecture {architecture!r} is not supported by the native engine; "
            f"supported: {', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    module, name = _REGISTRY[architecture]
    return getattr(importlib.import_module(module), name)
