"""Stages of a model version and the transitions between them.

``staging`` is where a new version lands. ``canary`` takes a share of live traffic,
``production`` takes the rest; a model has at most one version in each of the two (the
database enforces it). ``archived`` is retired, and may come back to ``staging``.
"""

from __future__ import annotations

from enum import StrEnum

from mcp.gateway.errors import StageTransitionError


class Stage(StrEnum):
    STAGING = "staging"
    CANARY = "canary"
    PRODUCTION = "production"
    ARCHIVED = "archived"


# Stages with at most one version per model.
EXCLUSIVE_STAGES = (Stage.CANARY, Stage.PRODUCTION)

ALLOWED_TRANSITIONS: dict[Stage, frozenset[Stage]] = {
    Stage.STAGING: frozenset({Stage.CANARY, Stage.PRODUCTION, Stage.ARCHIVED}),
    Stage.CANARY: frozenset({Stage.PRODUCTION, Stage.STAGING, Stage.ARCHIVED}),
    Stage.PRODUCTION: frozenset({Stage.ARCHIVED}),
    Stage.ARCHIVED: frozenset({Stage.STAGING}),
}


def parse_stage(text: str) -> Stage:
    try:
        return Stage(text)
    except ValueError:
        known = ", ".join(stage.value for stage in Stage)
        raise StageTransitionError(f"unknown stage {text!r}; stages are: {known}") from None


def check_transition(model_id: str, current: Stage, target: Stage) -> None:
    """Raise ``StageTransitionError`` unless ``current -> target`` is allowed."""
    if target in ALLOWED_TRANSITIONS[current]:
        return
    allowed = ", ".join(sorted(s.value for s in ALLOWED_TRANSITIONS[current]))
    raise StageTransitionError(
        f"{model_id} is in {current.value}; it cannot move to {target.value} "
        f"(from {current.value} it may move to: {allowed})"
    )
