"""Errors of the governance plane: all ``MCPError`` subclasses, each message saying what to do."""

from __future__ import annotations

from mcp.base.errors import MCPError, PolicyDenied


class PolicyError(MCPError):
    """A policy bundle does not load or compile, or a policy answered something malformed
    (a request it happens to is a 500: the server's policies are wrong, not the request)."""


class PolicyDeniedByRule(PolicyDenied):
    """A policy rule refused the request; ``rule`` names it (the message is its reason)."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"{reason} (policy rule {rule})")
        self.rule = rule
        self.reason = reason


class AuditError(MCPError):
    """The audit database cannot be reached, or an audit operation cannot be done."""


class SigningError(MCPError):
    """A key, certificate or chain file is missing or unusable, or a signature cannot be made."""


class EvidenceError(MCPError):
    """An evidence bundle cannot be built, or it fails verification; the message names the
    member, certificate or timestamp at fault."""
