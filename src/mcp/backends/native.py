"""The native engine as a backend: a ``.mcp`` file at one precision plan (fp32, int4, int8, ...).

``generate`` runs what users are served by: the SDK's ``Model`` over the engine, whose requests
go through its ``EngineLoop`` (paged KV, the scheduler, the native decode step where the plan
allows, the same precision plan the Session would resolve), so ``mcp2026 check consistency
--engines native-...`` compares the served path. ``score`` is the engine's teacher-forced
forward over the whole sequence on a contiguous cache (engine/contiguous.py): the loop gives
no per-position logits of a prompt. A packed (int4/int8) plan thus scores on its prefill
kernels and generates on its decode kernels; the check covers both kernel paths of a plan.
"""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch

from mcp.backends.base import (
    Backend, BackendError, Capabilities, Generation, GenerationParams, Health, Prompt, Scores, ScoreKind,
    TopLogprobs, check_loaded, kv_bytes, token_tuple,
)
from mcp.config.runtime import GenerationDefaults
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.handle import RequestOptions
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.modelfile.reader import open_model
from mcp.runtime.model import Model


# A backend runs one request at a time: its KV cache is sized for one full-context sequence
# (the Session's default is room for 32). Every other loop setting is the Session's default.
ONE_AT_A_TIME = LoopConfig(scheduler=SchedulerConfig(max_num_seqs=1))


class NativeBackend(Backend):
    capabilities = Capabilities(scores=ScoreKind.LOGITS, token_ids=True)

    def __init__(self, model_path: Path, options: EngineOptions, name: str = "native") -> None:
        self.name = name
        self.model_path = Path(model_path)
        self.options = options
        self.engine: NativeEngine | None = None
        self.model: Model | None = None  # the SDK's model over ``engine``: its loop generates

    def load(self) -> None:
        if self.engine is None:
            with open_model(self.model_path) as model_file:
                engine = NativeEngine(model_file, self.options)
            self.model = Model(self.name, self.model_path, engine, GenerationDefaults(), ONE_AT_A_TIME)
            self.engine = engine

    def unload(self) -> None:
        if self.model is not None:
            self.model.unload()  # stops the loop thread and frees its KV storage
        self.engine, self.model = None, None

    def health(self) -> Health:
        if self.engine is None:
            return Health(False, "not loaded")
        return Health(True, f"{self.model_path.name} on {self.engine.device}")

    def generate(self, prompt: Prompt, params: GenerationParams) -> Generation:
        engine = self._engine()
        assert self.model is not None  # loaded together with the engine
        sampling = SamplingParams(max_tokens=params.max_tokens, temperature=params.temperature, seed=params.seed,
                                  ignore_eos=True, logprobs=params.top_logprobs or None)
        started = time.perf_counter()
        handle = self.model.loop.submit(list(prompt.token_ids), sampling, RequestOptions())
        try:
            steps = list(handle)
        finally:
            handle.cancel()  # a no-op once it has finished; stops it if the caller went away
        seconds = time.perf_counter() - started
        ids = token_tuple(step.token_id for step in steps)
        top = tuple(_top(step.top_logprobs) for step in steps) if params.top_logprobs else ()
        return Generation(ids, engine.tokenizer.decode(ids, skip_special_tokens=True), seconds, top)

    def score(self, sequence: Prompt, top_k: int) -> Scores:
        return Scores(logits=contiguous_decoder(self._engine()).score(list(sequence.token_ids)))

    def versions(self) -> dict[str, str]:
        return {"mcp2026": _package_version("mcp2026"), "torch": torch.__version__}

    def kv_bytes_per_token(self) -> int | None:
        engine = self._engine()
        arch = engine.header.architecture
        element = torch.tensor([], dtype=engine.model.dtype).element_size()
        return kv_bytes(arch.num_layers, arch.num_kv_heads, arch.head_dim, element)

    def describe(self) -> str:
        plan = self.engine.precision if self.engine is not None else self.options.precision
        return f"{self.name}: {self.model_path.name}, {plan}"

    def _engine(self) -> NativeEngine:
        check_loaded(self, self.engine)
        return self.engine


def _top(pairs: tuple[tuple[int, float], ...]) -> TopLogprobs:
    return TopLogprobs(tuple(i for i, _ in pairs), tuple(p for _, p in pairs))


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def native_options(precision: str) -> EngineOptions:
    """CPU options for one precision name of the registry (fp32, int4 = the auto plan, int8, bf16)."""
    plans = {"fp32": "fp32", "int4": "auto", "int8": "int8", "bf16": "bf16"}
    if precision not in plans:
        raise BackendError(f"native precision {precision!r} is unknown; use one of {', '.join(plans)}")
    return EngineOptions(device="cpu", precision=plans[precision])
