"""What a rollout is: its plan (route, arms, steps, gates), and the frozen snapshots the store
hands out. Weights are whole percents of the route's traffic given to the canary arm."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from mcp.gateway.registry.records import as_utc
from mcp.gateway.registry.schema import RolloutEventRow, RolloutRow

DEFAULT_STEPS = (5, 20, 50, 100)
TERMINAL = ("succeeded", "rolled_back", "aborted")


@dataclass(frozen=True)
class Gates:
    """An analysis passes when the canary's p95 latency, error rate and OOM count are within these."""

    max_p95_ms: float = 800.0
    max_error_rate: float = 0.002  # strictly below: the brief's "error rate < 0.2%"
    max_oom: int = 0


@dataclass(frozen=True)
class RolloutPlan:
    """How to start a rollout: the split route, its two arms and their backends, the steps."""

    route: str
    stable_arm: str
    canary_arm: str
    stable_model: str  # name:version or name@stage, as the routing file says
    canary_model: str
    stable_pool: str
    canary_pool: str
    steps: tuple[int, ...] = DEFAULT_STEPS
    hold_s: float = 60.0  # each step lasts at least this long ...
    min_requests: int = 50  # ... and until the canary has answered this many requests in it
    gates: Gates = Gates()


@dataclass(frozen=True)
class Rollout:
    id: int
    plan: RolloutPlan
    step_index: int
    weight: int  # the canary arm's percent now (after the end: what stays in force)
    status: str  # running | succeeded | rolled_back | aborted
    reason: str | None
    created_at: datetime
    created_by: str
    step_started_at: datetime
    updated_at: datetime

    @property
    def running(self) -> bool:
        return self.status == "running"

    @classmethod
    def from_row(cls, row: RolloutRow) -> Rollout:
        plan = RolloutPlan(row.route, row.stable_arm, row.canary_arm, row.stable_model, row.canary_model,
                           row.stable_pool, row.canary_pool, tuple(row.steps["weights"]), row.hold_s,
                           row.min_requests, Gates(**row.gates))
        return cls(row.id, plan, row.step_index, row.weight, row.status, row.reason, as_utc(row.created_at),
                   row.created_by, as_utc(row.step_started_at), as_utc(row.updated_at))

    def summary(self) -> dict[str, Any]:
        """JSON-ready: what `rollout status` and the admin API show."""
        return {"id": self.id, **asdict(self.plan), "step": self.step_index, "weight": self.weight,
                "status": self.status, "reason": self.reason, "created_at": self.created_at.isoformat(),
                "created_by": self.created_by, "step_started_at": self.step_started_at.isoformat(),
                "updated_at": self.updated_at.isoformat()}


@dataclass(frozen=True)
class RolloutEvent:
    at: datetime
    actor: str
    kind: str  # start | analysis | step | promote | succeed | rollback | abort
    step_index: int
    weight: int
    passed: bool | None
    detail: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: RolloutEventRow) -> RolloutEvent:
        return cls(as_utc(row.at), row.actor, row.kind, row.step_index, row.weight, row.passed, row.detail)

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "at": self.at.isoformat()}
