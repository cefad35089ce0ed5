"""The error hierarchy. Every error MCP 2026 raises on purpose is an ``MCPError``.

This module imports nothing from the rest of the package, so every layer (modelfile,
engine, serving) can raise these without importing the SDK above it. Each message says
what was wrong and what to do about it.
"""

from __future__ import annotations


class MCPError(Exception):
    """Base class of all MCP 2026 errors."""


class ConfigError(MCPError):
    """A configuration file or value is wrong; the message names the key."""


class ModelNotFoundError(MCPError):
    """A model path or catalog name does not resolve to a file."""


class ModelFormatError(MCPError):
    """A model file is corrupt, truncated, foreign, or of an unknown format version."""


class UnsupportedModelError(ModelFormatError):
    """A well-formed model uses an architecture or tensor type this engine cannot run."""


class InvalidRequestError(MCPError, ValueError):
    """An inference request has a bad argument; the message names it."""


class ContextLengthError(InvalidRequestError):
    """The prompt (plus the requested tokens) does not fit in the model's context."""


class DownloadError(MCPError):
    """A model could not be fetched, or what was fetched failed its hash check."""


class CapacityError(MCPError):
    """The engine cannot take the request now; ``retry_after_s`` hints when to retry."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PolicyDenied(MCPError):
    """A governance policy refused the request."""


class EngineError(MCPError):
    """The engine failed while running a request (a forward or sampling step raised); the
    request was ended and its resources freed, and the engine goes on serving the others."""


class ModelSignatureError(MCPError):
    """A model must be signed (``runtime.require_signed_models``) and its detached signature
    is missing, does not match the file, or is not from a trusted certificate."""


class RequestCancelled(MCPError):
    """The request was cancelled before it finished."""


class WorkerUnavailableError(MCPError):
    """The isolated worker process serving a model crashed (or is restarting, or stopped
    restarting after too many crashes); ``retry_after_s`` hints when to retry."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
