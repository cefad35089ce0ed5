"""The contract between the runner and what it loads: open a request, iterate its deltas.

The runner times everything itself (send, each delta, end), so every target is measured the
same way; a target only turns one ``RequestSpec`` into a stream of text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from mcp.ops.loadgen.workload import RequestSpec


class TargetStream(Protocol):
    """One request in flight. Iterate for text deltas; after the last, the usage fields are set."""

    prompt_tokens: int | None  # None when the target did not report them
    completion_tokens: int | None
    finish_reason: str | None

    def __iter__(self) -> Iterator[str]: ...

    def close(self) -> None:
        """Stop early (the run's drain time is over): the server side must stop generating."""


class Target(Protocol):
    name: str

    def open(self, request: RequestSpec) -> TargetStream:
        """Send the request. Raises ``CapacityError`` when it is refused at admission."""

    def describe(self) -> dict:
        """What the report records about the target (kind, model, URL, options)."""
