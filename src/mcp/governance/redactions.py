"""``Redactions``: how many spans the policies replaced in one request, by stage and finding kind.

An input ``redact`` rule replaces spans of the prompt before the model sees it; an output rule
replaces spans of the answer before the client gets them (every choice counted together). The
serving layer reports the counts on the answer (``serving/redactions.py``: a header, a field,
gRPC trailing metadata); the audit record keeps the decision and its rules, not the counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mcp.governance.detectors.scanner import Finding


@dataclass(frozen=True)
class Redactions:
    input: Mapping[str, int] = field(default_factory=dict)  # finding kind -> spans replaced in the prompt
    output: Mapping[str, int] = field(default_factory=dict)  # finding kind -> spans replaced in the answer

    @classmethod
    def of(cls, input_findings: Iterable[Finding], output_findings: Iterable[Finding]) -> Redactions:
        """The counts of the findings each stage replaced."""
        return cls(_by_kind(input_findings), _by_kind(output_findings))

    @property
    def num_redacted(self) -> int:
        return sum(self.input.values()) + sum(self.output.values())

    def prompt_only(self) -> Redactions:
        """The prompt's counts alone (all a stream's headers can say: its answer is still to come)."""
        return Redactions(self.input)

    def __bool__(self) -> bool:
        return self.num_redacted > 0


def _by_kind(findings: Iterable[Finding]) -> dict[str, int]:
    return dict(sorted(Counter(finding.kind for finding in findings).items()))
