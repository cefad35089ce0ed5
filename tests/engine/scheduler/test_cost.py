"""The step-cost model: it starts at its prior and fits the steps it observes."""

from __future__ import annotations

import pytest

from mcp.engine.scheduler.cost import DEFAULT_PRIOR, StepCost, StepCostModel


def test_without_observations_it_is_the_prior():
    assert StepCostModel().current() == pytest.approx(DEFAULT_PRIOR)


def test_it_fits_the_measured_step_times():
    truth = StepCost(base_s=0.040, per_token_s=0.0012, per_sequence_s=0.003)
    model = StepCostModel()
    for i in range(300):
        tokens, sequences = 1 + (i * 37) % 256, 1 + (i * 11) % 32
        model.observe(tokens, sequences, truth.step_seconds(tokens, sequences))
    fitted = model.current()
    assert fitted.base_s == pytest.approx(truth.base_s, rel=0.02)
    assert fitted.per_token_s == pytest.approx(truth.per_token_s, rel=0.02)
    assert fitted.per_sequence_s == pytest.approx(truth.per_sequence_s, rel=0.02)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="forgetting must be in"):
        StepCostModel(forgetting=1.5)
