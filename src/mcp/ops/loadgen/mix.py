"""Weighted mixes given on the command line (``critical=0.1,high=0.2``) and the SLO table.

A mix is a frozen tuple of (name, weight) pairs whose weights sum to 1; ``draw`` picks names
with a seeded numpy generator. The SLO table is what a request's class is scored against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcp.base.errors import InvalidRequestError
from mcp.engine.scheduler.slo import DEFAULT_TARGETS, SLOClass, SLOTarget

CLASS_NAMES = tuple(c.name.lower() for c in SLOClass)
DEFAULT_CLASS_MIX = "critical=0.1,high=0.2,medium=0.3,low=0.4"
DEFAULT_TENANTS = "tenant-a,tenant-b"


@dataclass(frozen=True)
class Mix:
    """Names with probabilities (normalized at parse time, so they sum to 1)."""

    items: tuple[tuple[str, float], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items)

    def draw(self, rng: np.random.Generator, size: int) -> list[str]:
        weights = np.array([weight for _, weight in self.items])
        picks = rng.choice(len(self.items), size=size, p=weights / weights.sum())
        return [self.items[i][0] for i in picks]

    def to_dict(self) -> dict[str, float]:
        return dict(self.items)


def parse_mix(text: str, what: str, allowed: tuple[str, ...] | None = None) -> Mix:
    """``a=0.3,b=0.7`` or ``a,b`` (equal weights). ``what`` names the flag in errors."""
    pairs = [part.strip() for part in str(text).split(",") if part.strip()]
    if not pairs:
        raise InvalidRequestError(f"{what} is empty; give NAME[=WEIGHT],... e.g. {DEFAULT_CLASS_MIX}")
    items: dict[str, float] = {}
    for pair in pairs:
        name, weight = _parse_pair(pair, what)
        if allowed is not None and name not in allowed:
            raise InvalidRequestError(f"{what}: unknown name {name!r}; use {', '.join(allowed)}")
        if name in items:
            raise InvalidRequestError(f"{what}: {name!r} is given twice; give each name once")
        items[name] = weight
    total = sum(items.values())
    if total <= 0:
        raise InvalidRequestError(f"{what}: the weights sum to 0; give at least one positive weight")
    return Mix(tuple((name, weight / total) for name, weight in items.items()))


def _parse_pair(pair: str, what: str) -> tuple[str, float]:
    name, sep, weight_text = pair.partition("=")
    name = name.strip()
    if not name:
        raise InvalidRequestError(f"{what}: {pair!r} has no name; give NAME[=WEIGHT]")
    if not sep:
        return name, 1.0
    try:
        weight = float(weight_text)
    except ValueError:
        raise InvalidRequestError(f"{what}: weight {weight_text!r} of {name!r} is not a number") from None
    if not weight >= 0 or weight == float("inf"):
        raise InvalidRequestError(f"{what}: weight of {name!r} must be a finite number >= 0, got {weight_text}")
    return name, weight


def parse_class_mix(text: str) -> Mix:
    return parse_mix(text, "--class-mix", CLASS_NAMES)


@dataclass(frozen=True)
class SLOTable:
    """The TTFT and TPOT target of each class, as the report scores requests."""

    targets: tuple[tuple[str, SLOTarget], ...]

    @classmethod
    def default(cls) -> SLOTable:
        return cls(tuple((c.name.lower(), t) for c, t in DEFAULT_TARGETS.items()))

    def target(self, slo_class: str) -> SLOTarget:
        for name, target in self.targets:
            if name == slo_class:
                return target
        raise InvalidRequestError(f"no SLO target for class {slo_class!r}; classes: {', '.join(self.names)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.targets)

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {name: {"ttft_s": t.ttft_s, "tpot_s": t.tpot_s} for name, t in self.targets}


def parse_slo_table(text: str, base: SLOTable | None = None) -> SLOTable:
    """``critical=0.5/0.05,high=1/0.1``: TTFT/TPOT seconds per class; unnamed classes keep ``base``."""
    table: dict[str, SLOTarget] = dict((base or SLOTable.default()).targets)
    for pair in (part.strip() for part in str(text).split(",") if part.strip()):
        name, _, values = pair.partition("=")
        name = name.strip()
        if name not in CLASS_NAMES:
            raise InvalidRequestError(f"--slo: unknown class {name!r}; use {', '.join(CLASS_NAMES)}")
        table[name] = _parse_target(name, values)
    return SLOTable(tuple((name, table[name]) for name in CLASS_NAMES))


def _parse_target(name: str, values: str) -> SLOTarget:
    ttft_text, sep, tpot_text = values.partition("/")
    try:
        ttft_s, tpot_s = float(ttft_text), float(tpot_text)
    except ValueError:
        raise InvalidRequestError(
            f"--slo: {name}={values!r} is not TTFT/TPOT in seconds; e.g. {name}=1.0/0.1") from None
    if not (sep and ttft_s > 0 and tpot_s > 0):
        raise InvalidRequestError(f"--slo: {name}: both targets must be positive seconds, got {values!r}")
    return SLOTarget(ttft_s=ttft_s, tpot_s=tpot_s)
