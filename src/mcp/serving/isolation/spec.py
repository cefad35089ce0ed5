"""``WorkerSpec``: everything a model's worker process is told, and nothing more.

A worker is told in two steps. First its ``WorkerLaunch`` (device, threads, sandbox limits):
what it needs to import, set up and enter its sandbox, before it knows any model; a spare
worker (spares.py) stops there and waits. Then its ``WorkerSpec``: the worker gets the model file's path, the engine and loop settings and its sandbox limits.
It never sees the server's tenants, API key digests, audit key, governance config or the
environment's secrets (``worker_environment`` keeps only what the engine needs to run).
``measurements`` is an opaque list the supervisor passes in (the measured launch log, for
attestation); the worker keeps it and reports it back, with its own sha256 of the model file
it opened, in its ``ready`` frame.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mcp.config.isolation import WorkerLimits
from mcp.engine.options import EngineOptions

# Variables a worker inherits: locale, paths to find Python and its packages, thread and
# accelerator settings. Anything else (API keys, database URLs, tokens) stays behind.
_KEPT_NAMES = frozenset(("PATH", "LD_LIBRARY_PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH",
                         "PYTHONHASHSEED", "VIRTUAL_ENV", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
_KEPT_PREFIXES = ("LC_", "OMP_", "KMP_", "CUDA_", "NVIDIA_", "HIP_", "ROCR_", "PYTORCH_", "TORCH_")


def worker_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment a worker starts with: an allowlist, never a copy."""
    return {name: value for name, value in environ.items()
            if name in _KEPT_NAMES or name.startswith(_KEPT_PREFIXES)}


@dataclass(frozen=True)
class EngineSettings(EngineOptions):
    """What the worker's engine is loaded with: every engine option (``runtime:`` in
    mcp-config.yaml), and the worker's threads and whether it verifies the file."""

    num_threads: int | None = None
    verify: bool = False


@dataclass(frozen=True)
class WorkerLaunch:
    """What a worker is started and sandboxed with, before it is given a model. A spare worker
    serves a load only when the load's launch equals the spare's (else it is discarded)."""

    device: str
    num_threads: int | None
    limits: WorkerLimits

    def to_wire(self, tokenizer: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``prepare`` frame; ``tokenizer`` (a TokenizerSpec as a dict, from a model served
        before) is only a hint the worker may build ahead (worker.py)."""
        return {"op": "prepare", "device": self.device, "num_threads": self.num_threads,
                "limits": asdict(self.limits), "tokenizer": tokenizer}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WorkerLaunch:
        threads = data["num_threads"]
        return cls(str(data["device"]), None if threads is None else int(threads), WorkerLimits(**data["limits"]))


@dataclass(frozen=True)
class WorkerSpec:
    """One model's worker: what to load, how to sandbox it, how its loop schedules."""

    name: str  # "model:version", for log lines
    model_path: str
    engine: EngineSettings
    loop_config: Mapping[str, Any]  # codec.encode_loop_config
    limits: WorkerLimits
    measurements: tuple[Any, ...] = field(default_factory=tuple)  # opaque: kept and reported back
    known_headers: tuple[str, ...] = ()  # sha256 of header JSONs the supervisor has checked (worker.py)

    @property
    def launch(self) -> WorkerLaunch:
        """What a worker for this spec must have been started with (its ``prepare`` frame)."""
        return WorkerLaunch(self.engine.device, self.engine.num_threads, self.limits)

    def to_wire(self) -> dict[str, Any]:
        return {"op": "start", **asdict(self), "loop_config": dict(self.loop_config)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WorkerSpec:
        engine = dict(data["engine"])
        engine["precision_overrides"] = tuple(tuple(pair) for pair in engine["precision_overrides"])
        return cls(name=str(data["name"]), model_path=str(data["model_path"]), engine=EngineSettings(**engine),
                   loop_config=dict(data["loop_config"]), limits=WorkerLimits(**data["limits"]),
                   measurements=tuple(data.get("measurements", ())),
                   known_headers=tuple(str(digest) for digest in data.get("known_headers", ())))
