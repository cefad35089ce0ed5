"""``serving.isolation`` and ``serving.worker``: how ``mcp2026 serve`` isolates each model.

``isolation: worker`` (the default on Linux) runs each served model's engine in a sandboxed
worker process of its own (docs/security.md, "Worker isolation"); ``isolation: none`` (the
default elsewhere, and the opt-out) runs it inside the server process. ``worker:`` holds the
sandbox's limits and the supervisor's restart policy. Schema at the edge, frozen inside.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

import pydantic

from mcp.base.errors import ConfigError
from mcp.base.sections import StrictSection

ISOLATION_MODES = ("worker", "none")


class WorkerSection(StrictSection):
    # the worker's RLIMIT_AS in GiB; auto: 16 GiB plus twice the model file on CPU, unlimited on CUDA
    address_space_gib: float | Literal["auto", "unlimited"] = "auto"
    max_open_files: int = pydantic.Field(1024, ge=64)  # RLIMIT_NOFILE
    network_namespace: bool = True  # false: skip the empty network namespace (seccomp still refuses sockets)
    seccomp: bool = True  # false: no system call filter (for debugging only)
    start_timeout_s: float = pydantic.Field(300.0, gt=0)  # spawn to ready (the model loaded)
    restart_backoff_s: float = pydantic.Field(0.5, ge=0)  # the first restart waits this long, doubling
    restart_backoff_max_s: float = pydantic.Field(30.0, ge=0)
    max_restarts_per_minute: int = pydantic.Field(5, ge=1)  # past this, the model stays down
    spare_workers: int = pydantic.Field(1, ge=0, le=8)  # sandboxed workers started ahead of a load; 0: none


@dataclass(frozen=True)
class WorkerLimits:
    """The sandbox's limits and the supervisor's restart policy (``serving.worker``)."""

    address_space_gib: float | None = None  # None: auto
    unlimited_address_space: bool = False
    max_open_files: int = 1024
    network_namespace: bool = True
    seccomp: bool = True
    start_timeout_s: float = 300.0
    restart_backoff_s: float = 0.5
    restart_backoff_max_s: float = 30.0
    max_restarts_per_minute: int = 5
    spare_workers: int = 1  # started ahead, sandboxed, waiting for a model (serving/isolation/spares.py)


def default_isolation(platform: str = sys.platform) -> str:
    """``worker`` where the sandbox exists (Linux), ``none`` elsewhere."""
    return "worker" if platform.startswith("linux") else "none"


def resolve_isolation(mode: str | None, source: str, platform: str = sys.platform) -> str:
    if mode is None:
        return default_isolation(platform)
    if mode not in ISOLATION_MODES:
        raise ConfigError(f"{source}: serving.isolation must be worker or none, got {mode!r}")
    if mode == "worker" and not platform.startswith("linux"):
        raise ConfigError(f"{source}: serving.isolation: worker needs Linux (this is {platform}); "
                          "use isolation: none")
    return mode


def resolve_worker(section: WorkerSection, source: str) -> WorkerLimits:
    space = section.address_space_gib
    if isinstance(space, float) and space <= 0:
        raise ConfigError(f"{source}: serving.worker.address_space_gib must be positive, auto or unlimited, "
                          f"got {space}")
    if section.restart_backoff_max_s < section.restart_backoff_s:
        raise ConfigError(f"{source}: serving.worker.restart_backoff_max_s must be at least restart_backoff_s")
    return section.into(WorkerLimits, address_space_gib=space if isinstance(space, float) else None,
                        unlimited_address_space=space == "unlimited")


def address_space_bytes(limits: WorkerLimits, model_bytes: int, device: str) -> int | None:
    """The RLIMIT_AS to set, or None for none. CUDA reserves address space far past the memory
    it uses (its unified addressing), so auto leaves a CUDA worker unlimited."""
    if limits.unlimited_address_space:
        return None
    if limits.address_space_gib is not None:
        return int(limits.address_space_gib * (1 << 30))
    if device.startswith("cuda"):
        return None
    return (16 << 30) + 2 * model_bytes
