"""The model service abstraction layer: one Backend protocol, engines behind it (see base.py)."""

from mcp.backends.base import (
    Backend, BackendError, Capabilities, Generation, GenerationParams, Health, Prompt, Scores, ScoreKind,
    TopLogprobs,
)
from mcp.backends.registry import BackendUnavailable, ModelSources, create_backend, known_specs, parse_spec

__all__ = [
    "Backend", "BackendError", "BackendUnavailable", "Capabilities", "Generation", "GenerationParams", "Health",
    "ModelSources", "Prompt", "ScoreKind", "Scores", "TopLogprobs", "create_backend", "known_specs", "parse_spec",
]
