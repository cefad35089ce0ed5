"""Lifecycle hooks: callbacks the engine loop calls as a sequence starts, generates and ends.

Three hook points, each with its own frozen event:

- ``on_sequence_start`` (``SequenceStarted``): the loop has taken the request (once, before
  any of its tokens);
- ``on_token_generated`` (``TokenGenerated``): one per generated token, in order;
- ``on_generation_complete`` (``GenerationCompleted``): exactly once, whatever ended it
  (``finish_reason`` stop, length, cancelled, deadline or error).

Callbacks run on the loop thread, between steps, before the submitter receives the same token
or ending: a slow one slows every request, and one must never wait for a result of the same
model (the thread that would produce it is the one running the callback). One that raises is
logged (logger ``mcp.engine.hooks``) and skipped; the loop and the request go on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.base.errors import InvalidRequestError
from mcp.base.timing import RequestTimings  # noqa: F401  (its home before base; events carry it)

HOOK_NAMES = ("on_sequence_start", "on_token_generated", "on_generation_complete")
logger = logging.getLogger("mcp.engine.hooks")


@dataclass(frozen=True)
class SequenceStarted:
    request_id: str
    tenant: str
    slo_class: str
    num_prompt_tokens: int
    arrival_s: float


@dataclass(frozen=True)
class TokenGenerated:
    request_id: str
    tenant: str
    slo_class: str
    index: int  # position among the request's generated tokens, from 0
    token_id: int
    text: str  # the text this token releases ("" while held back)
    time_s: float


@dataclass(frozen=True)
class GenerationCompleted:
    request_id: str
    tenant: str
    slo_class: str
    finish_reason: str  # stop | length | cancelled | deadline | error
    num_prompt_tokens: int
    num_output_tokens: int
    num_cached_tokens: int  # prompt tokens found in the prefix cache
    num_preemptions: int
    timings: RequestTimings
    error: str | None = None  # what went wrong, when finish_reason is "error"


class HookHandle:
    """Returned by ``HookRegistry.add``; ``remove()`` unregisters the callback (idempotent)."""

    def __init__(self, registry: HookRegistry, name: str, callback: Callable[[Any], object]) -> None:
        self._registry, self.name, self.callback = registry, name, callback

    def remove(self) -> None:
        self._registry._remove(self)


class HookRegistry:
    """Callbacks per hook point; add/remove from any thread, ``emit`` from the loop thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hooks: dict[str, tuple[HookHandle, ...]] = {name: () for name in HOOK_NAMES}

    def add(self, name: str, callback: Callable[[Any], object]) -> HookHandle:
        if name not in self._hooks:
            raise InvalidRequestError(f"unknown hook {name!r}; use one of {', '.join(HOOK_NAMES)}")
        if not callable(callback):
            raise InvalidRequestError(f"hook {name!r} needs a callable, got {type(callback).__name__}")
        handle = HookHandle(self, name, callback)
        with self._lock:
            self._hooks[name] = (*self._hooks[name], handle)
        return handle

    def _remove(self, handle: HookHandle) -> None:
        with self._lock:
            self._hooks[handle.name] = tuple(h for h in self._hooks[handle.name] if h is not handle)

    def has(self, name: str) -> bool:
        return bool(self._hooks[name])

    def emit(self, name: str, event: object) -> None:
        """Call every callback of ``name`` with ``event``; one that raises is logged and skipped."""
        for handle in self._hooks[name]:  # a snapshot: the tuple is replaced, never changed
            try:
                handle.callback(event)
            except Exception:  # noqa: BLE001 - a user's hook must not end the loop or the request
                logger.exception("hook %s (%r) raised on %r; the engine goes on", name, handle.callback, event)
