"""``Session``: the SDK's entry point. It owns the config and the models it loaded.

    from mcp.runtime import Session
    session = Session.from_config("mcp-config.yaml")
    model = session.load_model("smollm2-135m-instruct.mcp")
    result = model.infer(prompt="Explain quantum entanglement in simple terms.",
                         max_tokens=128, temperature=0.7)
    print(result.text)
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import torch

from mcp.base.errors import ConfigError, ModelNotFoundError
from mcp.config.model_path import catalog_name, resolve_model_path
from mcp.config.runtime import RuntimeConfig, load_config
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.modelfile.reader import open_model
from mcp.runtime.model import Model


class Session:
    """Loads models and holds them until unloaded or the session closes."""

    def __init__(self, config: RuntimeConfig | None = None) -> None:
        self.config = config or RuntimeConfig()
        self._models: dict[str, Model] = {}
        self._lock = threading.Lock()
        if self.config.num_threads is not None:
            torch.set_num_threads(self.config.num_threads)

    @classmethod
    def from_config(cls, path: str | os.PathLike) -> Session:
        """A session configured by an ``mcp-config.yaml`` (see docs/config.md)."""
        return cls(load_config(path))

    @property
    def models(self) -> dict[str, Model]:
        with self._lock:
            return dict(self._models)

    def load_model(
        self,
        model: str | os.PathLike,
        *,
        name: str | None = None,
        verify: bool | None = None,
        precision: str | None = None,
        device: str | None = None,
    ) -> Model:
        """Load a ``.mcp`` file (a path, relative to the config's model_dir) or a catalog name.

        A catalog name (``mcp2026 pull --list``) is fetched and compiled on first use.
        """
        path = self._resolve(model)
        key = name or catalog_name(path)
        with self._lock:
            if key in self._models:
                raise ConfigError(
                    f"a model named {key!r} is already loaded in this session; "
                    "unload it first or pass name=... to load another copy"
                )
        options = EngineOptions.of(self.config, device=device or self.config.device,
                                   precision=precision or self.config.precision)
        if self.config.require_signed_models:
            _check_signature(path, self.config.trusted_ca)
        check = self.config.verify_models if verify is None else verify
        engine = load_on_a_passing_thread(path, check, options)
        loaded = Model(key, path, engine, self.config.generation, self.config.scheduler)
        with self._lock:
            self._models[key] = loaded
        gc.freeze()  # see unload_model
        return loaded

    def unload_model(self, model: Model | str) -> None:
        """Free a model's weights; later calls on it raise a clear error."""
        key = model.name if isinstance(model, Model) else model
        with self._lock:
            loaded = self._models.pop(key, None)
        if loaded is None:
            raise ModelNotFoundError(f"no model named {key!r} is loaded; loaded: {sorted(self._models)}")
        # A load freezes what is alive then (gc.freeze: the model's modules, the tokenizer,
        # torch's own objects), so that the cycle collector's full passes, which a request's
        # allocations set off, stop walking them: they took ~5% of a 1B model's time to first
        # token. An unload thaws everything first, so that the model's cycles are collected.
        gc.unfreeze()
        loaded.unload()
        gc.collect()
        gc.freeze()

    def close(self) -> None:
        for key in list(self.models):
            self.unload_model(key)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def locate(self, model: str | os.PathLike) -> Path:
        """The ``.mcp`` file ``model`` names (``resolve_model_path``), its signature checked when
        ``runtime.require_signed_models`` is on: what a model worker process is given to load."""
        path = resolve_model_path(self.config, model)
        if self.config.require_signed_models:
            _check_signature(path, self.config.trusted_ca)
        return path

    def _resolve(self, model: str | os.PathLike) -> Path:
        return resolve_model_path(self.config, model)


def _check_signature(path: Path, trusted_ca: Path | None) -> None:
    """``runtime.require_signed_models``: the model's ``.sig`` must verify against the trusted CA."""
    from mcp.governance.signing.models import trusted_certificates, verify_model

    verify_model(path, trusted_certificates(trusted_ca))


def load_on_a_passing_thread(path: Path, verify: bool, options: EngineOptions) -> NativeEngine:
    """Build the engine on a thread that ends with the load.

    GNU OpenMP (torch's on Linux) gives every thread that starts a parallel region its own
    team of worker threads, and once the process holds more of those than it has cores, each
    worker stops spinning between regions and sleeps: every small parallel op then waits for a
    wake-up. A model's steps run on its engine loop's thread, so the loop's team should be the
    only one: a load on the caller's thread (torch.cat of fused weights runs in parallel) would
    leave the caller a team for good, and decode steps 1.5x slower (measured: 30 against 20 ms
    a token at 2 threads). A team goes away with its thread.
    """
    result: dict[str, object] = {}

    def load() -> None:
        try:
            with open_model(path, verify=verify) as model_file:
                result["engine"] = NativeEngine(model_file, options)
        except BaseException as error:  # noqa: BLE001 - handed to the caller below
            result["error"] = error

    loader = threading.Thread(target=load, name="mcp-load")
    loader.start()
    loader.join()
    if "error" in result:
        raise result["error"]
    return result["engine"]
