"""The canary controller: each tick, every running rollout is analysed and then held, stepped
up, finished or rolled back.

A step moves on when it has lasted ``hold_s`` and the canary arm has answered ``min_requests``
requests in it, and the analysis of those requests passes; the first analysis that fails rolls
the rollout back (canary weight 0) at once. Requests observed before this process started are
gone, so after a restart a step collects its requests again (its hold counts from the database).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from mcp.gateway.canary.analysis import Analysis, ArmWindow, analyze, stats
from mcp.gateway.canary.records import Rollout
from mcp.gateway.canary.store import RolloutStore

log = logging.getLogger(__name__)
ACTOR = "canary-controller"
OomProbe = Callable[[str, float], int]  # (pool, window seconds) -> OOMs its instances report


class CanaryController:
    def __init__(self, store: RolloutStore, window: ArmWindow, oom_probe: OomProbe | None = None,
                 clock=time.time) -> None:
        self.store = store
        self.window = window
        self.oom_probe = oom_probe
        self._clock = clock
        self._started_at = clock()

    def tick(self) -> list[Rollout]:
        """Check every running rollout once; returns those that changed."""
        changed = []
        for rollout in self.store.running():
            after = self.check(rollout)
            if after is not None:
                changed.append(after)
        return changed

    def check(self, rollout: Rollout) -> Rollout | None:
        step_start = rollout.step_started_at.timestamp()
        analysis = self.analyze(rollout, max(step_start, self._started_at))
        if analysis.canary.requests < max(1, rollout.plan.min_requests):
            return None
        if not analysis.passed:
            log.warning("rollout #%d (%s) rolled back at %d%%: %s", rollout.id, rollout.plan.route, rollout.weight,
                        "; ".join(analysis.failures))
            self.store.record_analysis(rollout.id, rollout.step_index, False, analysis.detail(), ACTOR)
            return self.store.roll_back(rollout.id, "analysis failed: " + "; ".join(analysis.failures),
                                        analysis.detail(), rollout.step_index, ACTOR)
        if self._clock() - step_start < rollout.plan.hold_s:
            return None
        self.store.record_analysis(rollout.id, rollout.step_index, True, analysis.detail(), ACTOR)
        after = self.store.advance(rollout.id, rollout.step_index, actor=ACTOR)
        log.info("rollout #%d (%s): step %d passed, canary now %d%% (%s)", rollout.id, rollout.plan.route,
                 rollout.step_index, after.weight, after.status)
        return after

    def analyze(self, rollout: Rollout, since: float) -> Analysis:
        plan = rollout.plan
        ooms = self.oom_probe(plan.canary_pool, max(1.0, self._clock() - since)) if self.oom_probe else 0
        canary = stats(self.window.since(plan.route, plan.canary_arm, since), ooms)
        stable = stats(self.window.since(plan.route, plan.stable_arm, since))
        return analyze(canary, stable, plan.gates)
