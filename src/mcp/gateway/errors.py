"""Errors of the gateway: all ``MCPError`` subclasses, each message saying what to do."""

from __future__ import annotations

from mcp.base.errors import ConfigError, MCPError


class RegistryError(MCPError):
    """Base of the model registry's errors."""


class RegistryUnavailableError(RegistryError):
    """The registry database cannot be reached or opened."""


class DuplicateVersionError(RegistryError):
    """A model version with this name and version is already registered."""


class UnknownModelError(RegistryError):
    """No model of this name is registered."""


class UnknownVersionError(RegistryError):
    """The model exists but has no such version."""


class StageTransitionError(RegistryError):
    """The requested stage change is not allowed from the version's current stage."""


class RoutingConfigError(ConfigError):
    """A routing file is invalid; the message names the route and the field."""


class RolloutError(MCPError):
    """A rollout cannot be started or changed as asked (the message says why and what to do)."""


class UnknownRolloutError(RolloutError):
    """No rollout has this id."""


class GatewayConfigError(ConfigError):
    """The gateway's config file is invalid; the message names the key."""


class UpstreamError(MCPError):
    """Every member (and every fallback) failed for a request. ``reason`` is ``error``,
    ``timeout`` or ``over_capacity``; ``status`` is what the gateway answers."""

    def __init__(self, message: str, reason: str, status: int, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status
        self.retry_after_s = retry_after_s
