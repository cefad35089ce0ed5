"""Statuses and what one evidence query found."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    MET = "met"  # every control it needs is in place and its evidence checks out now
    PARTLY = "partly"  # some of it is in place, or in place without full evidence
    NOT_MET = "not met"  # nothing of it is in place now, or no control of the system covers it
    NOT_APPLICABLE = "not applicable"  # the clause sets no duty for this system (the data says why)


@dataclass(frozen=True)
class ControlResult:
    """An evidence query's answer: the control's status now, and the facts behind it."""

    status: Status
    evidence: tuple[str, ...]


def result(status: Status, *evidence: str) -> ControlResult:
    return ControlResult(status, tuple(evidence))


def combine(statuses: Iterable[Status]) -> Status:
    """All met: met; none met or partly (or nothing at all): not met; anything else: partly."""
    statuses = [s for s in statuses if s is not Status.NOT_APPLICABLE]
    if statuses and all(s is Status.MET for s in statuses):
        return Status.MET
    if any(s in (Status.MET, Status.PARTLY) for s in statuses):
        return Status.PARTLY
    return Status.NOT_MET
