"""A seeded workload: which requests arrive when, with what prompt, class, tenant and budget.

Scenarios (docs/loadgen.md):

- ``poisson``: Poisson arrivals at the rate; prompts drawn uniformly from the pool.
- ``gamma``: gamma arrivals with ``burstiness``; prompts uniform.
- ``bursty-zipf``: the brief's bursty read mix: arrivals at the rate (gamma with
  ``burstiness``, Poisson by default) and ×3 (+200%) in a window over the middle fifth of the
  run (with only ``num_requests``, the run's length is N over the mean rate, 1.4 × the base);
  prompts drawn with Zipf(1.2) popularity over the pool (rank 1 = the pool's first).
- ``mixed``: the brief's mixed steady load: Poisson arrivals, prompts uniform, and each
  request's ``max_tokens`` drawn from ¼, ½ or all of ``--max-tokens`` (40/30/30%).

Each part is drawn from its own child of one ``SeedSequence(seed)``, so two runs at different
rates get the same prompts, classes, tenants and budgets in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.arrivals import RateProfile, arrival_times
from mcp.ops.loadgen.mix import DEFAULT_CLASS_MIX, DEFAULT_TENANTS, Mix, parse_class_mix, parse_mix
from mcp.ops.loadgen.prompts import BUILTIN_PROMPTS

SCENARIOS = ("poisson", "gamma", "bursty-zipf", "mixed")
BURST_FACTOR = 3.0  # +200%
BURST_WINDOW = (0.4, 0.6)  # fractions of the run's duration
ZIPF_EXPONENT = 1.2
MIXED_BUDGETS = ((0.25, 0.4), (0.5, 0.3), (1.0, 0.3))  # (fraction of max_tokens, probability)


@dataclass(frozen=True)
class RequestSpec:
    """One request of the workload; ``arrival_s`` is seconds from the start of the run."""

    index: int
    arrival_s: float
    prompt: str
    prompt_index: int
    max_tokens: int
    slo_class: str
    tenant: str


@dataclass(frozen=True)
class WorkloadSpec:
    scenario: str = "poisson"
    rate: float = 1.0  # requests/s (the base rate, before the burst)
    burstiness: float = 1.0
    num_requests: int | None = None
    duration_s: float | None = None
    max_tokens: int = 64
    seed: int = 0
    class_mix: Mix = parse_class_mix(DEFAULT_CLASS_MIX)
    tenants: Mix = parse_mix(DEFAULT_TENANTS, "--tenants")
    prompts: tuple[str, ...] = BUILTIN_PROMPTS

    def __post_init__(self) -> None:
        _check_spec(self)

    def with_rate(self, rate: float) -> WorkloadSpec:
        return replace(self, rate=rate)

    @property
    def nominal_duration_s(self) -> float:
        """The run's length: the duration, or the time N requests take at the mean rate (burst included)."""
        if self.duration_s is not None:
            return self.duration_s
        burst_share = BURST_WINDOW[1] - BURST_WINDOW[0] if self.scenario == "bursty-zipf" else 0.0
        return self.num_requests / (self.rate * (1.0 + (BURST_FACTOR - 1.0) * burst_share))

    def to_dict(self) -> dict:
        return {"scenario": self.scenario, "rate": self.rate, "burstiness": self.burstiness,
                "num_requests": self.num_requests, "duration_s": self.duration_s,
                "max_tokens": self.max_tokens, "seed": self.seed, "class_mix": self.class_mix.to_dict(),
                "tenants": self.tenants.to_dict(), "num_prompts": len(self.prompts)}


def _check_spec(spec: WorkloadSpec) -> None:
    if spec.scenario not in SCENARIOS:
        raise InvalidRequestError(f"unknown scenario {spec.scenario!r}; use one of {', '.join(SCENARIOS)}")
    if spec.num_requests is None and spec.duration_s is None:
        raise InvalidRequestError("give --num-requests or --duration (or both); a run must be bounded")
    if spec.num_requests is not None and spec.num_requests <= 0:
        raise InvalidRequestError(f"--num-requests must be positive, got {spec.num_requests}")
    if spec.duration_s is not None and not spec.duration_s > 0:
        raise InvalidRequestError(f"--duration must be positive seconds, got {spec.duration_s}")
    if spec.max_tokens <= 0:
        raise InvalidRequestError(f"--max-tokens must be positive, got {spec.max_tokens}")
    if spec.burstiness != 1.0 and spec.scenario in ("poisson", "mixed"):
        raise InvalidRequestError(
            f"--burstiness applies to the gamma and bursty-zipf scenarios; {spec.scenario} is Poisson")
    if not spec.prompts:
        raise InvalidRequestError("the prompt pool is empty; give at least one prompt")
    RateProfile(spec.rate)  # checks the rate


def rate_profile(spec: WorkloadSpec) -> RateProfile:
    if spec.scenario != "bursty-zipf":
        return RateProfile(spec.rate)
    length = spec.nominal_duration_s
    return RateProfile(spec.rate, BURST_WINDOW[0] * length, BURST_WINDOW[1] * length, BURST_FACTOR)


def build_workload(spec: WorkloadSpec) -> tuple[RequestSpec, ...]:
    """The requests in arrival order; the same spec gives the same workload."""
    arrivals_seed, prompts_seed, classes_seed, tenants_seed, budgets_seed = np.random.SeedSequence(spec.seed).spawn(5)
    times = arrival_times(rate_profile(spec), spec.burstiness, np.random.default_rng(arrivals_seed),
                          max_count=spec.num_requests, max_time_s=spec.duration_s)
    count = len(times)
    prompt_ids = draw_prompt_indices(spec, np.random.default_rng(prompts_seed), count)
    classes = spec.class_mix.draw(np.random.default_rng(classes_seed), count)
    tenants = spec.tenants.draw(np.random.default_rng(tenants_seed), count)
    budgets = draw_budgets(spec, np.random.default_rng(budgets_seed), count)
    return tuple(
        RequestSpec(i, times[i], spec.prompts[prompt_ids[i]], prompt_ids[i], budgets[i], classes[i], tenants[i])
        for i in range(count)
    )


def zipf_weights(num_items: int, exponent: float = ZIPF_EXPONENT) -> np.ndarray:
    """P(rank k) ∝ k^-exponent for k = 1..num_items (a Zipf law truncated to the pool)."""
    weights = np.arange(1, num_items + 1, dtype=np.float64) ** -exponent
    return weights / weights.sum()


def draw_prompt_indices(spec: WorkloadSpec, rng: np.random.Generator, count: int) -> list[int]:
    size = len(spec.prompts)
    weights = zipf_weights(size) if spec.scenario == "bursty-zipf" else np.full(size, 1.0 / size)
    return [int(i) for i in rng.choice(size, size=count, p=weights)]


def draw_budgets(spec: WorkloadSpec, rng: np.random.Generator, count: int) -> list[int]:
    if spec.scenario != "mixed":
        return [spec.max_tokens] * count
    fractions = np.array([fraction for fraction, _ in MIXED_BUDGETS])
    picks = rng.choice(fractions, size=count, p=[p for _, p in MIXED_BUDGETS])
    return [max(1, round(spec.max_tokens * float(f))) for f in picks]
