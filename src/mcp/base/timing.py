"""A request's clock readings, shared by the engine (which takes them), the SDK's results (which
turn them into seconds) and the worker wire codec (which carries them across processes).

It lives in base because all three need it and the results type must not import the engine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestTimings:
    """``time.monotonic()`` seconds: submitted, first token (None before it), ended (None before),
    and scheduled: when its first chunk went into a step, leaving the queue (None if it never did)."""

    arrival_s: float
    first_token_s: float | None = None
    finished_s: float | None = None
    scheduled_s: float | None = None

    @property
    def queue_s(self) -> float | None:
        return None if self.scheduled_s is None else self.scheduled_s - self.arrival_s

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_s is None else self.first_token_s - self.arrival_s

    @property
    def total_s(self) -> float | None:
        return None if self.finished_s is None else self.finished_s - self.arrival_s
