"""``ModelHost``: the models a server serves, by name and version, on one ``Session``.

No HTTP here: the HTTP app and the gRPC service both resolve a request's model through it.

    host = ModelHost(session)
    host.load(ServedModel("smollm2", "smollm2-135m-instruct", version="1"))
    with host.acquire("smollm2") as version:       # "smollm2:1" names the version itself
        version.model.infer(...)

With ``serving.isolation: worker`` (the default on Linux) each version's engine runs in a
sandboxed worker process of its own (serving/isolation/); with ``none``, in this process.

Each name has one *current* version (what ``"name"`` resolves to) and may hold others
(``"name:version"`` reaches them). Loading a new version of a served name makes it current
once it is ready; the one it replaces is *retired*: requests already holding it finish on it,
new ones go to the new version, and it is unloaded when its last request releases it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from mcp.base.errors import ConfigError, ModelNotFoundError
from mcp.config.serving import ServedModel
from mcp.runtime.model import Model
from mcp.runtime.session import Session

Listener = Callable[["ModelVersion"], object]


class ModelLoader(Protocol):
    """Where a host's models run: in this process, or each in a worker process."""

    def load(self, spec: ServedModel, key: str) -> Model: ...

    def unload(self, key: str) -> None: ...

    def after_ready(self, key: str) -> None:
        """``key`` has served its warm-up: background work (a spare worker's start) may begin."""

    def close(self) -> None: ...


class InProcessModels:
    """Models loaded into the host's Session (``serving.isolation: none``)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def load(self, spec: ServedModel, key: str) -> Model:
        return self.session.load_model(spec.source, name=key, precision=spec.precision)

    def unload(self, key: str) -> None:
        self.session.unload_model(key)

    def after_ready(self, key: str) -> None:
        """Nothing to start in the background."""

    def close(self) -> None:
        """Nothing of its own to end: the Session's models are unloaded one by one."""


def default_loader(session: Session) -> ModelLoader:
    """The loader ``session.config.serving.isolation`` asks for."""
    if session.config.serving.isolation == "worker":
        from mcp.serving.isolation.models import WorkerModels

        return WorkerModels(session)
    return InProcessModels(session)


@dataclass(eq=False)
class ModelVersion:
    """One loaded version of a served model and the requests holding it."""

    name: str
    version: str
    source: str
    model: Model
    load_s: float  # the load call itself: weights mapped, kernels packed, engine loop started
    load_to_ready_s: float  # from the load call to the first token of a warm-up request
    loaded_at: float = field(default_factory=time.time)  # wall clock (for /v1/models)
    in_flight: int = 0
    retired: bool = False  # no new requests; unloaded when in_flight reaches 0

    @property
    def key(self) -> str:
        return f"{self.name}:{self.version}"


class ModelHost:
    """Loaded model versions, their routing and their in-flight counts. Thread-safe."""

    def __init__(self, session: Session, default_model: str | None = None,
                 loader: ModelLoader | None = None) -> None:
        self.session = session
        self.default_model = default_model
        self.loader = loader or default_loader(session)
        self._lock = threading.Lock()  # guards the tables and every version's in_flight/retired
        self._load_lock = threading.Lock()  # one load at a time: two would compete for memory and cores
        self._versions: dict[str, ModelVersion] = {}  # key "name:version"
        self._current: dict[str, str] = {}  # name -> key of its current version
        self._on_load: list[Listener] = []
        self._on_unload: list[Listener] = []
        self._unloading: set[threading.Thread] = set()  # retired versions being unloaded now
        self._unloading_lock = threading.Lock()  # _unload_later runs with and without _lock held

    # -- listeners (metrics add their hooks to each version) --------------------------------
    def add_listeners(self, on_load: Listener, on_unload: Listener) -> None:
        self._on_load.append(on_load)
        self._on_unload.append(on_unload)

    # -- loading and unloading ------------------------------------------------------------
    def load(self, spec: ServedModel, activate: bool = True) -> ModelVersion:
        """Load ``spec`` and, with ``activate``, make it its name's current version (a swap).

        The previous current version is retired: it finishes its requests, then unloads.
        """
        key = f"{spec.name}:{spec.version}"
        with self._load_lock:
            with self._lock:
                if key in self._versions:
                    raise ConfigError(f"model {key} is already loaded; unload it first or give another version")
            started = time.perf_counter()
            model = self.loader.load(spec, key)
            load_s = time.perf_counter() - started
            _warm_up(model)
            loaded = ModelVersion(spec.name, spec.version, spec.source, model, load_s,
                                  time.perf_counter() - started)
            self.loader.after_ready(key)
            for listener in self._on_load:
                listener(loaded)
            with self._lock:
                self._versions[key] = loaded
                if activate or spec.name not in self._current:
                    self._activate(loaded)
        return loaded

    def load_from_admin(self, spec: ServedModel, activate: bool = True) -> ModelVersion:
        """``load`` for an admin API call: the source must lie in the folders
        ``serving.admin_models`` allows (serving/sources.py), else ``PermissionDeniedError``."""
        from mcp.serving.sources import check_admin_source

        check_admin_source(self.session.config, spec.source)
        return self.load(spec, activate)

    def swap(self, name: str, version: str) -> ModelVersion:
        """Make an already loaded version current; the one it replaces is retired."""
        with self._lock:
            loaded = self._versions.get(f"{name}:{version}")
            if loaded is None or loaded.retired:
                raise ModelNotFoundError(f"model {name}:{version} is not loaded; load it first "
                                         f"(loaded: {', '.join(self._live_keys()) or 'none'})")
            self._activate(loaded)
        return loaded

    def unload(self, name: str, version: str | None = None) -> list[ModelVersion]:
        """Retire one version (or every version of ``name``); each unloads once drained."""
        with self._lock:
            keys = [k for k, v in self._versions.items() if v.name == name and not v.retired
                    and (version is None or v.version == version)]
            if not keys:
                raise ModelNotFoundError(f"no model {name}{':' + version if version else ''} is loaded "
                                         f"(loaded: {', '.join(self._live_keys()) or 'none'})")
            retired = [self._versions[key] for key in keys]
            for loaded in retired:
                if self._current.get(name) == loaded.key:
                    del self._current[name]
                self._retire(loaded)
        return retired

    def close(self) -> None:
        """Unload everything now (requests still running end with RequestCancelled), wait for
        the unloads of retired versions under way, and close the loader (its spare workers)."""
        with self._lock:
            versions, self._versions, self._current = list(self._versions.values()), {}, {}
        with self._unloading_lock:
            unloading = list(self._unloading)
        for loaded in versions:
            self._unload_now(loaded)
        for thread in unloading:
            thread.join()
        self.loader.close()

    # -- serving requests -----------------------------------------------------------------
    @contextmanager
    def acquire(self, model: str | None) -> Iterator[ModelVersion]:
        """Hold the version ``model`` resolves to for one request; released on exit."""
        loaded = self.resolve_and_hold(model)
        try:
            yield loaded
        finally:
            self.release(loaded)

    def resolve_and_hold(self, model: str | None) -> ModelVersion:
        """The version ``model`` names (``name``, ``name:version`` or None for the default),
        counted in flight until ``release``. Raises ModelNotFoundError."""
        with self._lock:
            loaded = self._resolve(model)
            loaded.in_flight += 1
            return loaded

    def release(self, loaded: ModelVersion) -> None:
        with self._lock:
            loaded.in_flight -= 1
            drained = loaded.retired and loaded.in_flight == 0
        if drained:
            self._unload_later(loaded)

    def versions(self) -> list[ModelVersion]:
        """The versions serving requests now (retired ones left out)."""
        with self._lock:
            return [v for v in self._versions.values() if not v.retired]

    def current(self) -> dict[str, ModelVersion]:
        with self._lock:
            return {name: self._versions[key] for name, key in self._current.items()}

    @property
    def ready(self) -> bool:
        """A model is loaded and every live version can serve (readiness: /ready, gRPC health)."""
        with self._lock:
            if not self._current:
                return False
        return not self.unservable()

    def unservable(self) -> dict[str, str]:
        """Each live version that cannot serve now, by key, with why: a worker restarting after
        a crash, or one the supervisor gave up on (the versions ``mcp_worker_up`` shows as 0)."""
        from mcp.serving.isolation.models import worker_loop

        problems = {}
        for loaded in self.versions():
            loop = worker_loop(loaded.model)
            problem = loop.supervisor.problem if loop is not None else None
            if problem is not None:
                problems[loaded.key] = problem
        return problems

    # -- internals (called with _lock held) ------------------------------------------------
    def _resolve(self, model: str | None) -> ModelVersion:
        name = model or self.default_model or next(iter(self._current), None)
        key = self._current.get(name) if name is not None else None
        if key is None and name is not None and name in self._versions:
            key = name
        loaded = self._versions.get(key) if key is not None else None
        if loaded is None or loaded.retired:
            served = ", ".join(sorted(self._current)) or "none"
            raise ModelNotFoundError(f"the model {model!r} does not exist or is not loaded here; "
                                     f"served: {served} (or name:version, see /v1/models)")
        return loaded

    def _activate(self, loaded: ModelVersion) -> None:
        previous = self._versions.get(self._current.get(loaded.name, ""))
        self._current[loaded.name] = loaded.key
        if previous is not None and previous is not loaded:
            self._retire(previous)

    def _retire(self, loaded: ModelVersion) -> None:
        loaded.retired = True
        if loaded.in_flight == 0:
            self._unload_later(loaded)

    def _live_keys(self) -> list[str]:
        return sorted(k for k, v in self._versions.items() if not v.retired)

    def _unload_later(self, loaded: ModelVersion) -> None:
        """Unload on a thread of its own: closing a loop joins its thread, which must not hold
        up the request (or the event loop) that released the version last."""
        thread = threading.Thread(target=self._unload_and_forget, args=(loaded,), name=f"mcp-unload-{loaded.key}")
        with self._unloading_lock:
            self._unloading.add(thread)
        thread.start()

    def _unload_and_forget(self, loaded: ModelVersion) -> None:
        try:
            self._unload_now(loaded)
        finally:
            with self._unloading_lock:
                self._unloading.discard(threading.current_thread())

    def _unload_now(self, loaded: ModelVersion) -> None:
        with self._lock:
            if self._versions.get(loaded.key) is loaded:
                del self._versions[loaded.key]
        try:
            self.loader.unload(loaded.key)
        except ModelNotFoundError:
            return  # unloaded already (close() raced a drained release)
        for listener in self._on_unload:
            listener(loaded)


def _warm_up(model: Model) -> None:
    """One token through the loop (one embedding, for an embedding model), so that 'ready'
    means a first request is served at speed."""
    if model.embeds:
        model.embed("Hi")
    else:
        model.infer("Hi", raw=True, max_tokens=1, temperature=0.0)
