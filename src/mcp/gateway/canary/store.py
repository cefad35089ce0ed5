"""Rollouts in the registry database: start, step, promote, roll back, abort, and their events.

Each operation is one registry transaction that locks the rollout's row, so a CLI, the admin
API and a controller acting at once queue instead of racing; controller moves name the step
they expect and do nothing when it has moved since (``expect_step``). Each weight change also
updates the two versions' ``deployments`` rows and writes a change-log entry, and a rollout that
reaches 100% promotes its canary version to ``production``. The database allows one running
rollout per route.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from mcp.gateway.canary.records import Rollout, RolloutEvent, RolloutPlan
from mcp.gateway.errors import RegistryError, RolloutError, UnknownRolloutError
from mcp.gateway.registry.records import now
from mcp.gateway.registry.registry import Registry, upsert_deployment
from mcp.gateway.registry.schema import RolloutEventRow, RolloutRow, VersionRow
from mcp.gateway.registry.stages import Stage
from mcp.gateway.registry.unit_of_work import UnitOfWork, unit_of_work
from mcp.gateway.routing.schema import parse_model_id


class RolloutStore:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def start(self, plan: RolloutPlan, actor: str | None = None) -> Rollout:
        _check_plan(plan)
        try:
            with self._work(actor) as work:
                stable, canary = _version(work, plan.stable_model), _version(work, plan.canary_model)
                if canary.stage == Stage.STAGING.value:
                    self.registry.move(work, canary, Stage.CANARY)
                moment = now()
                row = RolloutRow(route=plan.route, stable_arm=plan.stable_arm, canary_arm=plan.canary_arm,
                                 stable_model=plan.stable_model, canary_model=plan.canary_model,
                                 stable_pool=plan.stable_pool, canary_pool=plan.canary_pool,
                                 steps={"weights": list(plan.steps)}, step_index=0, weight=plan.steps[0],
                                 status="running", hold_s=plan.hold_s, min_requests=plan.min_requests,
                                 gates=asdict(plan.gates), created_at=moment, created_by=work.actor,
                                 step_started_at=moment, updated_at=moment)
                work.session.add(row)
                work.session.flush()
                self._changed(work, row, "start", None, {"steps": list(plan.steps)}, stable, canary)
                return Rollout.from_row(row)
        except IntegrityError:
            running = self.running(plan.route)
            which = f" (#{running[0].id})" if running else ""
            raise RolloutError(f"route {plan.route!r} already has a running rollout{which}; "
                               "promote or abort it first") from None

    def get(self, rollout_id: int) -> Rollout:
        with self._work() as work:
            return Rollout.from_row(_row(work, rollout_id))

    def list(self, route: str | None = None, limit: int | None = None) -> list[Rollout]:
        """Newest first."""
        with self._work() as work:
            query = select(RolloutRow).order_by(RolloutRow.id.desc())
            if route is not None:
                query = query.where(RolloutRow.route == route)
            return [Rollout.from_row(r) for r in work.session.scalars(query.limit(limit))]

    def running(self, route: str | None = None) -> list[Rollout]:
        with self._work() as work:
            query = select(RolloutRow).where(RolloutRow.status == "running").order_by(RolloutRow.id)
            if route is not None:
                query = query.where(RolloutRow.route == route)
            return [Rollout.from_row(r) for r in work.session.scalars(query)]

    def events(self, rollout_id: int) -> list[RolloutEvent]:
        with self._work() as work:
            _row(work, rollout_id)
            query = select(RolloutEventRow).where(RolloutEventRow.rollout_id == rollout_id)
            return [RolloutEvent.from_row(e) for e in work.session.scalars(query.order_by(RolloutEventRow.id))]

    def weights(self) -> dict[str, Rollout]:
        """The newest rollout of each route: its ``weight`` is what the router gives the canary arm
        (running: the current step; after the end: what the end left in force)."""
        with self._work() as work:
            newest = select(func.max(RolloutRow.id)).group_by(RolloutRow.route)
            rows = work.session.scalars(select(RolloutRow).where(RolloutRow.id.in_(newest)))
            return {row.route: Rollout.from_row(row) for row in rows}

    def record_analysis(self, rollout_id: int, expect_step: int, passed: bool, detail: dict[str, Any],
                        actor: str | None = None) -> None:
        with self._work(actor) as work:
            row = _row(work, rollout_id, lock=True)
            if row.status == "running" and row.step_index == expect_step:
                _event(work, row, "analysis", passed, detail)

    def advance(self, rollout_id: int, expect_step: int | None = None, full: bool = False,
                actor: str | None = None, kind: str = "step") -> Rollout:
        """The next step; past the last step (or with ``full``) the rollout succeeds.
        ``expect_step`` given and no longer current: nothing changes."""
        with self._work(actor) as work:
            row = _running_row(work, rollout_id, "promote")
            if expect_step is not None and row.step_index != expect_step:
                return Rollout.from_row(row)
            steps = row.steps["weights"]
            if full or row.step_index + 1 >= len(steps):
                return self._succeed(work, row)
            before = {"step": row.step_index, "weight": row.weight}
            row.step_index += 1
            row.weight, row.step_started_at = steps[row.step_index], now()
            self._changed(work, row, kind, before, {"step": row.step_index, "weight": row.weight})
            return Rollout.from_row(row)

    def roll_back(self, rollout_id: int, reason: str, detail: dict[str, Any] | None = None,
                  expect_step: int | None = None, actor: str | None = None, kind: str = "rollback") -> Rollout:
        """Canary weight to 0, the canary version back to ``staging``, and the rollout ended
        (``rolled_back``, or ``aborted`` by a person)."""
        with self._work(actor) as work:
            row = _running_row(work, rollout_id, "abort")
            if expect_step is not None and row.step_index != expect_step:
                return Rollout.from_row(row)
            before = {"step": row.step_index, "weight": row.weight}
            row.status = "aborted" if kind == "abort" else "rolled_back"
            row.weight, row.reason = 0, reason
            canary = _version(work, row.canary_model, required=False)
            if canary is not None and canary.stage == Stage.CANARY.value:
                self.registry.move(work, canary, Stage.STAGING)  # frees the model's canary stage
            self._changed(work, row, kind, before, {"weight": 0, "reason": reason, **(detail or {})})
            return Rollout.from_row(row)

    def _succeed(self, work: UnitOfWork, row: RolloutRow) -> Rollout:
        """100% reached: the canary version becomes production. A canary arm named by stage
        (``name@canary``) then resolves to nothing, so the stable arm (``name@production``, now
        the new version) takes all traffic again; a ``name:version`` canary arm keeps 100%."""
        before = {"step": row.step_index, "weight": row.weight}
        canary = _version(work, row.canary_model, required=False)
        if canary is not None and canary.stage != Stage.PRODUCTION.value:
            self.registry.move(work, canary, Stage.PRODUCTION)
        row.status, row.reason = "succeeded", f"reached {row.steps['weights'][-1]}%"
        row.weight = 0 if parse_model_id(row.canary_model)[2] is not None else 100
        self._changed(work, row, "succeed", before, {"weight": row.weight, "status": "succeeded"}, canary=canary)
        return Rollout.from_row(row)

    def _changed(self, work: UnitOfWork, row: RolloutRow, kind: str, before: dict[str, Any] | None,
                 after: dict[str, Any], stable: VersionRow | None = None, canary: VersionRow | None = None) -> None:
        """One move: the event, the change-log entry, the deployments' traffic."""
        row.updated_at = now()
        work.session.flush()
        _event(work, row, kind, None, after)
        work.record(f"rollout.{kind}", row.canary_model, before, {"rollout": row.id, "route": row.route, **after})
        stable = stable or _version(work, row.stable_model, required=False)
        canary = canary or _version(work, row.canary_model, required=False)
        status = "active" if row.status in ("running", "succeeded") else row.status
        for version, pool, role, percent in ((stable, row.stable_pool, "stable", 100 - row.weight),
                                             (canary, row.canary_pool, "canary", row.weight)):
            if version is not None:
                upsert_deployment(work, version, pool, role, percent, status)

    def _work(self, actor: str | None = None):
        return unit_of_work(self.registry.engine, actor or self.registry.actor)


def _check_plan(plan: RolloutPlan) -> None:
    steps = list(plan.steps)
    if not steps or steps != sorted(set(steps)) or steps[0] <= 0 or steps[-1] != 100:
        raise RolloutError(f"steps {steps} must rise strictly from above 0 to 100, e.g. 5,20,50,100")
    if plan.hold_s < 0 or plan.min_requests < 0:
        raise RolloutError("hold and min requests must be >= 0")
    if plan.stable_arm == plan.canary_arm:
        raise RolloutError(f"the stable and canary arms are both {plan.stable_arm!r}; name two different arms")


def _row(work: UnitOfWork, rollout_id: int, lock: bool = False) -> RolloutRow:
    query = select(RolloutRow).where(RolloutRow.id == rollout_id)
    row = work.session.scalars(query.with_for_update() if lock else query).one_or_none()
    if row is None:
        raise UnknownRolloutError(f"no rollout #{rollout_id}; `mcp2026 rollout status` lists them")
    return row


def _running_row(work: UnitOfWork, rollout_id: int, action: str) -> RolloutRow:
    row = _row(work, rollout_id, lock=True)
    if row.status != "running":
        raise RolloutError(f"rollout #{rollout_id} has ended ({row.status}: {row.reason}); nothing to {action}")
    return row


def _event(work: UnitOfWork, row: RolloutRow, kind: str, passed: bool | None, detail: dict[str, Any] | None) -> None:
    work.session.add(RolloutEventRow(rollout_id=row.id, at=now(), actor=work.actor, kind=kind,
                                     step_index=row.step_index, weight=row.weight, passed=passed, detail=detail))


def _version(work: UnitOfWork, model_id: str, required: bool = True) -> VersionRow | None:
    """The registry's version behind ``name:version`` or ``name@stage``."""
    name, version, stage = parse_model_id(model_id)
    try:
        if version is not None:
            return work.version(name, version)
        model = work.model(name)
    except RegistryError:
        if required:
            raise
        return None
    query = select(VersionRow).where(VersionRow.model_id == model.id, VersionRow.stage == stage)
    row = work.session.scalars(query.order_by(VersionRow.id.desc())).first()
    if row is None and required:
        raise RolloutError(f"{model_id}: model {name!r} has no version in {stage}; register or promote one first")
    return row


