"""``OutputGuard``: the output policy on one choice's text, whole or streamed.

Streamed text is checked on a sliding window: the last ``window_chars`` characters (and any
finding that reaches into them) are held back until more text comes, so a card number or a
key split across chunks is still seen whole before any of it is sent. Each check scans the
held text, asks the output policy (a decision is cached per set of finding kinds: the rest
of its input is the request's), and then sends what may go: redacted spans replaced, or
nothing more once a rule denies (the choice ends with ``content_filter``). ``redacted`` keeps
the findings whose spans were replaced (the API reports their count).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp.governance.detectors.scanner import Finding, Scanner, redaction
from mcp.governance.policy.decision import Decision

Decide = Callable[[list[Finding]], Decision]


class OutputGuard:
    def __init__(self, scanner: Scanner, decide: Decide, window_chars: int) -> None:
        self.scanner, self.decide, self.window_chars = scanner, decide, window_chars
        self.held = ""
        self.sent: list[str] = []
        self.redacted: list[Finding] = []  # the findings whose spans were replaced in what was sent
        self.stopped_by: Decision | None = None
        self.check_ns = 0  # time spent checking (the trace's output policy span)

    @property
    def stopped(self) -> bool:
        return self.stopped_by is not None

    @property
    def text(self) -> str:
        """Everything sent so far (what the client got, redactions included)."""
        return "".join(self.sent)

    def feed(self, text: str) -> str:
        """Take a chunk; return what may be sent now."""
        if self.stopped:
            return ""
        self.held += text
        return self._release(final=False)

    def flush(self) -> str:
        """The choice ended: check and release the rest."""
        return "" if self.stopped else self._release(final=True)

    def _release(self, final: bool) -> str:
        started = time.perf_counter_ns()
        findings = self.scanner.scan(self.held)
        decision = self.decide(findings)
        if decision.deny:
            self.stopped_by, self.held = decision, ""
            self.check_ns += time.perf_counter_ns() - started
            return ""
        cut = len(self.held) if final else self._cut(findings)
        released, replaced = redaction(self.held[:cut], [f for f in findings if f.end <= cut],
                                       decision.redact_kinds)
        self.held = self.held[cut:]
        self.redacted += replaced
        self.sent.append(released)
        self.check_ns += time.perf_counter_ns() - started
        return released

    def _cut(self, findings: list[Finding]) -> int:
        """Where the held text may be cut: before the window, and never inside a finding."""
        cut = max(0, len(self.held) - self.window_chars)
        for finding in findings:
            if finding.start < cut <= finding.end:  # a finding touching the cut may still grow
                cut = min(cut, finding.start)
        return cut
