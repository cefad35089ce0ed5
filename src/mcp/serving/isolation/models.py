"""``WorkerModels``: loads each served model as a ``Model`` whose engine runs in a worker.

The supervisor never opens the model file to parse it: the worker (sandboxed) parses and
checks the whole file, loads the engine, and hands back the header it checked, as JSON in its
``ready`` frame (a bad file arrives as the worker's ``ModelFormatError``). The supervisor parses
that JSON with the same checks and builds the tokenizer and chat template from it, so that
prompts are tokenized here and only token ids cross to the worker. The ``Model`` it returns is the SDK's own class over a ``WorkerLoop``, so the serving
layer uses it exactly as an in-process one. Workers start from spares launched ahead
(``serving.worker.spare_workers``, spares.py); after each load the next spare is launched.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcp.base.errors import ConfigError, ModelNotFoundError
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel
from mcp.engine.engine import NativeEngine
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.spec import ModelHeader
from mcp.runtime.model import Model
from mcp.runtime.session import Session
from mcp.serving.isolation import codec
from mcp.serving.isolation.headers import CheckedHeaders
from mcp.serving.isolation.spares import SpareWorkers
from mcp.serving.isolation.spec import EngineSettings, WorkerSpec
from mcp.serving.isolation.worker_loop import WorkerLoop


@dataclass(frozen=True)
class _Plan:
    by_tensor: dict[str, str]  # tensor -> its decode kernel, as the worker resolved it


@dataclass
class WorkerEngineView:
    """What a Model reads of its engine (an ``EngineView``, engine/contracts.py), for an engine
    that lives in a worker."""

    header: ModelHeader | None  # None only until the worker is ready
    tokenizer: Tokenizer | None
    precision: str
    max_context: int
    plan: _Plan = field(default_factory=lambda: _Plan({}))
    backend_name: str = NativeEngine.backend_name


class WorkerModels:
    """Loads and unloads worker-backed models for a ``ModelHost``.

    ``measurements`` (opaque, e.g. the measured launch log) goes to every worker in its start
    message; each worker reports it back with its own sha256 of the model file it opened
    (``worker_report(model)``), for attestation. ``close`` ends the spares and any model left.
    """

    def __init__(self, session: Session, measurements: Sequence[Any] = ()) -> None:
        self.session = session
        self.measurements = tuple(measurements)
        num_spares = session.config.serving.worker.spare_workers
        self.spares = SpareWorkers(num_spares) if num_spares > 0 else None
        self.headers = CheckedHeaders()
        self._models: dict[str, Model] = {}
        self._lock = threading.Lock()

    def load(self, spec: ServedModel, key: str) -> Model:
        with self._lock:
            if key in self._models:
                raise ConfigError(f"model {key} is already loaded; unload it first or give another version")
        path = self.session.locate(spec.source)  # resolves the path, checks a signature: never parses the file
        config = self.session.config
        worker_spec = WorkerSpec(key, str(path), _engine_settings(config, spec.precision),
                                 codec.encode_loop_config(config.scheduler), config.serving.worker, self.measurements,
                                 self.headers.digests())
        made: dict[str, WorkerLoop] = {}

        def make_loop(hooks):
            made["loop"] = WorkerLoop(worker_spec, config.scheduler, hooks, self.spares)
            return made["loop"]

        view = WorkerEngineView(None, None, "", 0)  # filled from the worker's ready frame below
        model = Model(key, path, view, config.generation, config.scheduler, make_loop)
        try:
            view.header, view.tokenizer = self.headers.from_ready(made["loop"].supervisor.first_ready, str(path))
            _fill_view(view, made["loop"].supervisor.first_ready)
        except BaseException:
            model._unload()  # the worker is up: stop it
            raise
        with self._lock:
            self._models[key] = model
        return model

    def after_ready(self, key: str) -> None:
        """Launch the next load's spare now that ``key`` is served (not before: its start-up
        would compete with the warm-up), its tokenizer as the spare's hint."""
        with self._lock:
            model = self._models.get(key)
        loop = worker_loop(model) if model is not None else None
        if self.spares is not None and loop is not None:
            self.spares.refill(loop.supervisor.spec.launch, asdict(model.engine.header.tokenizer))

    def unload(self, key: str) -> None:
        with self._lock:
            model = self._models.pop(key, None)
        if model is None:
            raise ModelNotFoundError(f"no model named {key!r} is loaded")
        model.unload()

    def close(self) -> None:
        """Unload what is still loaded and end the spares: no worker process is left."""
        with self._lock:
            keys = list(self._models)
        for key in keys:
            self.unload(key)
        if self.spares is not None:
            self.spares.close()


def _fill_view(view: WorkerEngineView, ready: dict[str, Any]) -> None:
    """The rest of what the Model reads of its engine, from the worker's ready frame."""
    view.precision, view.max_context = str(ready["precision"]), int(ready["max_context"])
    view.plan = _Plan(dict(ready["plan"]))


def worker_loop(model: Model) -> WorkerLoop | None:
    """The WorkerLoop behind ``model``, or None for an in-process model."""
    try:
        loop = model.loop
    except Exception:  # noqa: BLE001 - an unloaded model has none
        return None
    return loop if isinstance(loop, WorkerLoop) else None


def worker_report(model: Model) -> dict[str, Any] | None:
    """The worker's ready frame: pid, device, weight_bytes, model_sha256, measurements, sandbox;
    None in-process."""
    loop = worker_loop(model)
    process = loop.supervisor.process if loop is not None else None
    return None if process is None else {k: v for k, v in process.ready.items() if k != "header"}


def _engine_settings(config: RuntimeConfig, precision: str | None) -> EngineSettings:
    return EngineSettings.of(config, precision=precision or config.precision, num_threads=config.num_threads,
                             verify=config.verify_models)


def worker_rss_bytes(model: Model) -> int | None:
    """The resident memory (VmRSS) of the worker process serving ``model``: its weights, KV
    cache, interpreter and torch, as the kernel counts them; None in-process or while the worker
    restarts."""
    loop = worker_loop(model)
    process = loop.supervisor.process if loop is not None else None
    if process is None:
        return None
    try:
        status = Path(f"/proc/{process.pid}/status").read_text()
    except OSError:  # it exited between the two reads
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024  # in kB
    return None
