"""Errors of attestation: all ``MCPError`` subclasses, each saying what to do."""

from __future__ import annotations

from mcp.base.errors import InvalidRequestError, MCPError


class AttestationError(MCPError):
    """Evidence cannot be made or read: a provider failed, a key file is wrong, a file is malformed."""


class NonceError(InvalidRequestError):
    """The verifier's nonce is missing or malformed (HTTP 400)."""
