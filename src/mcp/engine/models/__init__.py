"""Model architectures, looked up by the family name in the ``.mcp`` header."""

from __future__ import annotations

from mcp.base.errors import UnsupportedModelError

SUPPORTED_ARCHITECTURES = ("llama",)


def model_class(architecture: str) -> type:
    """The module class for an architecture family; imported lazily."""
    if architecture == "llama":
        from mcp.engine.models.llama import LlamaForCausalLM

        return LlamaForCausalLM
    raise UnsupportedModelError(
        f"architecture {architecture!r} is not supported by the native engine; "
        f"supported: {', '.join(SUPPORTED_ARCHITECTURES)}"
    )
