"""How a model is loaded: ``EngineOptions``, each engine option declared once, its type and default.

Like ``loop_config.py`` it imports no torch, so the config schema may derive from it cheaply:
every field is a ``runtime:`` key of mcp-config.yaml (config/runtime.py generates those keys
from these fields) and a ``RuntimeConfig`` field (a subclass), and a worker's ``EngineSettings``
(serving/isolation/spec.py, also a subclass) carries them all. An option added here reaches
the YAML, the SDK and a worker process without being written again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Self, get_args

Precision = Literal["auto", "fp32", "bf16", "f16", "int4", "int8"]  # what a config may force
PRECISION_CHOICES = get_args(Precision)
# The native decode kernels' dots: "auto" picks int8x2 where the kernels have SIMD integer
# dots (AVX2, AVX-512), exact fp32 elsewhere (engine/precision.py, docs/config.md).
DecodeDots = Literal["auto", "int8", "int8x2", "exact"]
DECODE_DOTS = get_args(DecodeDots)


@dataclass(frozen=True)
class EngineOptions:
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    precision: Precision = "auto"  # auto (the file's plan, else by hardware) | fp32 | bf16 | f16 | int4 | int8
    precision_overrides: tuple[tuple[str, str], ...] = ()  # (fnmatch pattern, precision), first wins
    max_context: int | None = None  # cap below the model's own context length
    cache_prefill_weights: bool = False  # keep dense copies of int4 weights for prefill GEMMs
    native_kernels: bool = True  # use mcp.engine.kernels on a CPU when built (False: PyTorch's kernels)
    decode_dots: DecodeDots = "auto"  # native decode kernels: auto (int8x2 on AVX2/AVX-512) | exact (fp32) | int8 | int8x2
    native_step: bool = True  # decode steps as one C++ call where the plan allows (all native, fp32)

    @classmethod
    def of(cls, source: EngineOptions, **changed: Any) -> Self:
        """``cls`` with the engine options ``source`` holds (a ``RuntimeConfig`` is one), field by
        field, and ``changed`` on top (a per-load device, a worker's thread count)."""
        copied = {f.name: getattr(source, f.name) for f in dataclasses.fields(EngineOptions)}
        return cls(**{**copied, **changed})
