"""Errors of the compliance graph and report: ``MCPError`` subclasses that say what to fix."""

from __future__ import annotations

from mcp.base.errors import MCPError


class ComplianceDataError(MCPError):
    """A clause, concept or control file is malformed; the message names each file and id."""


class ComplianceReportError(MCPError):
    """A report cannot be made as asked (unknown framework, bad period, unwritable output)."""
