"""Stop-sequence handling over streamed text.

Text arrives in deltas (one per decoded token, of any length). ``StopChecker`` emits what is
safe at once and holds back only a suffix that could still grow into a stop string, so a
stop string never leaks into the output, not even in part.

Which stop wins: the first one to complete, reading the text character by character; of
several completing at the same character, the longest (it starts earliest). So the result
does not depend on how the text was cut into deltas.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopChecker:
    """Watches one sequence's text for its stop strings."""

    def __init__(self, stop: Sequence[str]) -> None:
        if any(not text for text in stop):
            raise ValueError("stop strings must be non-empty")
        self._stops = tuple(stop)
        self._held = ""  # text not yet emitted: a possible start of a stop string
        self._matched: str | None = None

    @property
    def matched(self) -> str | None:
        """The stop string that ended the text, or None while none has."""
        return self._matched

    @property
    def stopped(self) -> bool:
        return self._matched is not None

    def feed(self, delta: str) -> tuple[str, bool]:
        """Add ``delta``; return (text safe to emit now, whether a stop string has completed)."""
        if self._matched is not None:
            return "", True
        text = self._held + delta
        match = self._first_match(text)
        if match is not None:
            start, stop = match
            self._matched, self._held = stop, ""
            return text[:start], True
        keep = self._pending_length(text)
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep], False

    def flush(self) -> str:
        """At the end of generation without a stop: the held-back text."""
        held, self._held = self._held, ""
        return held

    def _first_match(self, text: str) -> tuple[int, str] | None:
        """(start, stop string) of the occurrence that ends first; ties go to the longest."""
        best: tuple[int, int, str] | None = None  # (end, -length, stop)
        for stop in self._stops:
            start = text.find(stop)
            if start >= 0:
                candidate = (start + len(stop), -len(stop), stop)
                best = candidate if best is None else min(best, candidate)
        if best is None:
            return None
        end, _, stop = best
        return end - len(stop), stop

    def _pending_length(self, text: str) -> int:
        """Length of the longest suffix of ``text`` that is a proper prefix of a stop string."""
        longest = 0
        for stop in self._stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest
