"""SLO classes and their latency targets.

Each request carries a class; each class has a time-to-first-token target and a
time-per-output-token target. The defaults suit a small model on a 2-core CPU, where one
decode step of a few sequences takes 25-50 ms; a deployment sets its own in config.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from mcp.base.errors import InvalidRequestError


class SLOClass(enum.IntEnum):
    """Lower value, higher priority."""

    CRITICAL = 0
    HIGH = 1
    MEDIUM = 2
    LOW = 3

    @classmethod
    def parse(cls, value: str | SLOClass) -> SLOClass:
        if isinstance(value, SLOClass):
            return value
        try:
            return cls[str(value).upper()]
        except KeyError:
            names = ", ".join(c.name.lower() for c in cls)
            raise InvalidRequestError(f"unknown SLO class {value!r}; use one of {names}") from None


@dataclass(frozen=True)
class SLOTarget:
    ttft_s: float  # request arrival -> first token
    tpot_s: float  # each later token

    def __post_init__(self) -> None:
        if not (self.ttft_s > 0 and self.tpot_s > 0):
            raise ValueError(f"SLO targets must be positive, got ttft {self.ttft_s} s, tpot {self.tpot_s} s")


DEFAULT_TARGETS: Mapping[SLOClass, SLOTarget] = {
    SLOClass.CRITICAL: SLOTarget(ttft_s=1.0, tpot_s=0.10),
    SLOClass.HIGH: SLOTarget(ttft_s=2.0, tpot_s=0.15),
    SLOClass.MEDIUM: SLOTarget(ttft_s=5.0, tpot_s=0.30),
    SLOClass.LOW: SLOTarget(ttft_s=20.0, tpot_s=1.00),
}
