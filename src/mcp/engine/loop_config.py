"""How an ``EngineLoop`` schedules and how much KV cache it holds: one frozen config.

``mcp-config.yaml``'s ``scheduler:`` section is validated at the edge (config/runtime.py)
and converted once into a ``LoopConfig``. The KV budget "auto" is resolved by the pure
function ``kv_cache_budget`` from the model's size per token and the memory available.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mcp.base.errors import ConfigError
from mcp.engine.scheduler.policy import FairShare, FCFSPolicy, SLOPolicy
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.scheduler.slo import DEFAULT_TARGETS, SLOClass, SLOTarget
from mcp.engine.scheduler.step import PacingConfig
from mcp.modelfile.spec import ArchitectureConfig

POLICIES = ("slo", "fcfs")
# What the KV cache holds: "auto" the activations' dtype (fp32 on a CPU with the native
# kernels), "fp32", or "f16" (IEEE halves: half the memory and half the bytes read per
# position; the native step rounds each new key and value once, as it writes them).
KV_CACHE_DTYPES = ("auto", "fp32", "f16")
# "auto" KV budget: room for max_num_seqs full-context sequences, but never more than this
# share of the memory available when the model loads (the weights and activations need the
# rest, and on a laptop other programs do too).
DEFAULT_KV_MEMORY_FRACTION = 0.1


@dataclass(frozen=True)
class LoopConfig:
    """The engine loop's scheduling and KV cache settings (docs/config.md, ``scheduler:``)."""

    policy: str = "slo"  # slo: classes, aging, tenant fair share, preemption | fcfs: arrival order
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    block_size: int = 16  # tokens per KV block
    kv_cache_bytes: int | None = None  # None: auto (see kv_cache_budget)
    kv_cache_memory_fraction: float = DEFAULT_KV_MEMORY_FRACTION
    kv_cache_dtype: str = "auto"  # KV_CACHE_DTYPES
    enable_prefix_caching: bool = True
    sink_tokens: int = 0  # with a window: the first tokens every later token still attends to
    # None: the model's own window where it has one on every layer (kv_window_tokens), else off;
    # else each sequence keeps its sinks and its last window_tokens
    window_tokens: int | None = None
    aging_s: float = 10.0  # a waiting request is promoted one class per aging_s seconds
    pacing: bool = True  # slo only: lower classes may not stretch a step past a higher class's TPOT
    pacing_margin: float = PacingConfig.margin  # of a TPOT kept back from each allowance
    pacing_min_allowance: float = PacingConfig.min_allowance  # of a TPOT, for a request behind schedule
    slo_targets: Mapping[SLOClass, SLOTarget] = field(default_factory=lambda: dict(DEFAULT_TARGETS))
    tenant_weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read-only views, so that the frozen config cannot be changed through its mappings.
        object.__setattr__(self, "slo_targets", MappingProxyType({**DEFAULT_TARGETS, **self.slo_targets}))
        object.__setattr__(self, "tenant_weights", MappingProxyType(dict(self.tenant_weights)))
        if self.policy not in POLICIES:
            raise ConfigError(f"scheduler.policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.block_size <= 0:
            raise ConfigError(f"scheduler.block_size must be a positive integer, got {self.block_size}")
        if self.kv_cache_bytes is not None and self.kv_cache_bytes <= 0:
            raise ConfigError(f"scheduler.kv_cache_bytes must be positive or auto, got {self.kv_cache_bytes}")
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ConfigError(f"scheduler.kv_cache_dtype must be one of {', '.join(KV_CACHE_DTYPES)}, "
                              f"got {self.kv_cache_dtype!r}")
        if not 0 < self.kv_cache_memory_fraction <= 1:
            raise ConfigError("scheduler.kv_cache_memory_fraction must be in (0, 1], "
                              f"got {self.kv_cache_memory_fraction}")
        if self.sink_tokens < 0:
            raise ConfigError(f"scheduler.sink_tokens must be >= 0, got {self.sink_tokens}")
        if self.window_tokens is not None and self.window_tokens < self.block_size:
            raise ConfigError(f"scheduler.window_tokens must be at least block_size ({self.block_size}) "
                              f"or null (off), got {self.window_tokens}")
        if self.aging_s <= 0:
            raise ConfigError(f"scheduler.aging_s must be positive, got {self.aging_s}")
        if not 0 <= self.pacing_margin < 1:
            raise ConfigError(f"scheduler.pacing_margin must be in [0, 1), got {self.pacing_margin}")
        if not 0 < self.pacing_min_allowance <= 1:
            raise ConfigError(f"scheduler.pacing_min_allowance must be in (0, 1], got {self.pacing_min_allowance}")
        for tenant, weight in self.tenant_weights.items():
            if weight <= 0:
                raise ConfigError(f"scheduler.tenant_weights.{tenant} must be positive, got {weight}")

    def make_policy(self) -> SLOPolicy | FCFSPolicy:
        """A fresh policy object (it keeps per-tenant counters, so one per loop)."""
        if self.policy == "fcfs":
            return FCFSPolicy(self.slo_targets)
        return SLOPolicy(self.slo_targets, self.aging_s, FairShare(self.tenant_weights))

    def make_pacing(self) -> PacingConfig:
        return PacingConfig(enabled=self.pacing and self.policy == "slo", margin=self.pacing_margin,
                            min_allowance=self.pacing_min_allowance)


def kv_window_tokens(config: LoopConfig, arch: ArchitectureConfig) -> int | None:
    """The KV window policy's window: the configured one, else the model's own where every layer
    attends through one (Mistral, Phi-3), whose blocks wholly before it no query reads again.
    None (every block kept): no window, one under a block, or one on some layers only (Gemma 3)."""
    if config.window_tokens is not None:
        return config.window_tokens
    window = arch.sliding_window
    if window is None or arch.sliding_window_pattern is not None or window < config.block_size:
        return None
    return window


def kv_cache_budget(config: LoopConfig, bytes_per_token: int, max_context: int, available_bytes: int) -> int:
    """Bytes of KV cache to allocate: the configured amount, or for ``auto`` enough for
    ``max_num_seqs`` sequences of ``max_context`` tokens, capped at ``kv_cache_memory_fraction``
    of ``available_bytes`` but never below one block."""
    if config.kv_cache_bytes is not None:
        return config.kv_cache_bytes
    wanted = config.scheduler.max_num_seqs * max_context * bytes_per_token
    cap = int(available_bytes * config.kv_cache_memory_fraction)
    return max(min(wanted, cap), config.block_size * bytes_per_token)
