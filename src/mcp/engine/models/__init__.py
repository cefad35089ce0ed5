"""Model architectures, looked up by the family name in the ``.mcp`` header.

A registry keyed by the architecture: each entry names the module and class, imported only
when a model of that family loads. Decoders (``llama``) generate; encoders (``bert``) embed.
"""

from __future__ import annotations

import importlib

from mcp.base.errors import UnsupportedModelError
from mcp.modelfile.spec import ArchitectureConfig

# family -> (module, class); imported lazily, only the family a file names
_REGISTRY: dict[str, tuple[str, str]] = {
    "llama": ("mcp.engine.models.llama", "LlamaForCausalLM"),
    "gemma3": ("mcp.engine.models.gemma3", "Gemma3ForCausalLM"),
    "qwen3": ("mcp.engine.models.qwen3", "Qwen3ForCausalLM"),
    "qwen3_moe": ("mcp.engine.models.qwen3", "Qwen3ForCausalLM"),
    "phi3": ("mcp.engine.models.phi3", "Phi3ForCausalLM"),
    "bert": ("mcp.engine.models.bert", "BertModel"),
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


def is_encoder(architecture: str) -> bool:
    """True for a family that only embeds (no KV cache, no output head, no generation)."""
    return architecture == "bert"


def sliding_window_layers(arch: ArchitectureConfig) -> tuple[bool, ...]:
    """Which layers attend only to the last ``arch.sliding_window`` positions: with a pattern
    (Gemma 3), all but every ``sliding_window_pattern``-th; without one, every layer."""
    if not arch.sliding_window:
        return (False,) * arch.num_layers
    pattern = arch.sliding_window_pattern
    return tuple(bool(not pattern or (index + 1) % pattern) for index in range(arch.num_layers))
