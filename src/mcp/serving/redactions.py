"""What governance redacted in one request, as the answer reports it (docs/api.md, "Redactions").

    x-mcp-redactions: input.email=1, output.payment_card=2       HTTP header; gRPC trailing metadata
    "mcp_redactions": {"count": 3, "input": {"email": 1}, "output": {"payment_card": 2}}   JSON field

The header is a Structured Field dictionary (RFC 9651): ``stage.kind`` = spans replaced. Both
are absent when nothing was redacted (or the server runs without ``serving.governance``). A
stream's headers go out before its answer is written, so there the header counts the prompt's
redactions only; the stream's last chunk (or event) carries the field with the whole count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.governance.redactions import Redactions

REDACTIONS_HEADER = "x-mcp-redactions"


def redactions_header(redactions: Redactions | None) -> dict[str, str]:
    """``{"x-mcp-redactions": value}``, or nothing when nothing was redacted."""
    if not redactions:
        return {}
    pairs = [f"{stage}.{kind}={count}" for stage, counts in (("input", redactions.input), ("output", redactions.output))
             for kind, count in counts.items()]
    return {REDACTIONS_HEADER: ", ".join(pairs)}


def redactions_body(redactions: Redactions | None) -> dict[str, Any] | None:
    """The ``mcp_redactions`` field's value, or None (left out) when nothing was redacted."""
    if not redactions:
        return None
    return {"count": redactions.num_redacted, "input": dict(redactions.input), "output": dict(redactions.output)}
