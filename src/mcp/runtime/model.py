"""``Model``: a loaded model in a Session, and its inference calls.

Generation options (all keyword-only, all optional; leaving one out takes the Session's
config default): ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``min_p``,
``repetition_penalty``, ``presence_penalty``, ``frequency_penalty``, ``seed``, ``stop``
(a string or a list of them), ``stop_token_ids``, ``ignore_eos``, ``logprobs`` (top-n per
token). ``infer`` and ``stream`` also take ``raw`` (default False: the prompt is sent as
one user message through the model's chat template when it has one, as Ollama's generate
does; True: the prompt text is tokenized as is) and ``system`` (a system message).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mcp.engine.engine import NativeEngine
from mcp.engine.generator import StepOutput
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.spec import ModelHeader
from mcp.runtime.config import GenerationDefaults
from mcp.runtime.errors import InvalidRequestError
from mcp.runtime.result import InferResult, Timings, TokenLogprob, Usage

SAMPLING_OPTIONS = frozenset(
    ("max_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
     "presence_penalty", "frequency_penalty", "seed", "stop", "stop_token_ids", "ignore_eos",
     "logprobs")
)
PROMPT_OPTIONS = frozenset(("raw", "system"))


class Model:
    """A model loaded by ``Session.load_model``. Safe to call from several threads."""

    def __init__(self, name: str, path: Path, engine: NativeEngine, defaults: GenerationDefaults) -> None:
        self.name = name
        self.path = path
        self._engine = engine
        self._defaults = defaults
        self._lock = threading.Lock()  # guards _engine/_unloaded against unload
        self._unloaded = False

    @property
    def header(self) -> ModelHeader:
        return self._engine.header

    @property
    def backend(self) -> str:
        return self._engine.backend_name

    @property
    def precision(self) -> str:
        return self._engine.precision

    @property
    def precision_plan(self) -> dict[str, str]:
        return dict(self._engine.plan.by_tensor)

    @property
    def max_context(self) -> int:
        return self._engine.max_context

    @property
    def engine(self) -> NativeEngine:
        return self._engine

    def tokenize(self, text: str) -> list[int]:
        return self._engine.tokenizer.encode(_check_text(text, "text"))

    def infer(self, prompt: str, **options: Any) -> InferResult:
        """Generate a completion for ``prompt``; see the module docstring for options."""
        prompt_ids, params = self._prepare_prompt(prompt, options)
        return self._collect(prompt_ids, params)

    def stream(self, prompt: str, **options: Any) -> Iterator[str]:
        """Like ``infer``, yielding text deltas as they are generated."""
        prompt_ids, params = self._prepare_prompt(prompt, options)
        return (step.text for step in self._start(prompt_ids, params) if step.text)

    def chat(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> InferResult:
        """Answer a conversation (OpenAI-style ``{"role", "content"}`` messages)."""
        prompt_ids, params = self._prepare_chat(messages, options)
        return self._collect(prompt_ids, params)

    def chat_stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Iterator[str]:
        prompt_ids, params = self._prepare_chat(messages, options)
        return (step.text for step in self._start(prompt_ids, params) if step.text)

    def _prepare_prompt(self, prompt: Any, options: dict[str, Any]) -> tuple[list[int], SamplingParams]:
        _check_options(options, SAMPLING_OPTIONS | PROMPT_OPTIONS)
        prompt = _check_text(prompt, "prompt")
        raw = options.pop("raw", False)
        system = options.pop("system", None)
        tokenizer = self._engine.tokenizer
        if raw or not self.header.tokenizer.chat_template:
            if system is not None:
                raise InvalidRequestError("system needs the chat template; it cannot be used with raw=True")
            return tokenizer.encode(prompt), self._sampling(options)
        messages = ([{"role": "system", "content": _check_text(system, "system")}] if system is not None else [])
        return self._prepare_chat([*messages, {"role": "user", "content": prompt}], options)

    def _prepare_chat(self, messages: Any, options: dict[str, Any]) -> tuple[list[int], SamplingParams]:
        _check_options(options, SAMPLING_OPTIONS)
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidRequestError("messages must be a list of {'role': ..., 'content': ...} mappings")
        tokenizer = self._engine.tokenizer
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        return tokenizer.encode(text, add_special_tokens=False), self._sampling(options)

    def _sampling(self, options: dict[str, Any]) -> SamplingParams:
        merged = asdict(self._defaults)
        merged.update({key: value for key, value in options.items() if value is not None})
        return SamplingParams.from_user(**merged)

    def _start(self, prompt_ids: list[int], params: SamplingParams) -> Iterator[StepOutput]:
        """Check the request now (not at the first ``next``) and return its token stream.

        Each generation owns its KV cache and the weights are read-only, so calls from
        several threads, or an ``infer`` while a ``stream`` is open, run side by side.
        A generation started before ``unload`` finishes on the weights it started with.
        """
        with self._lock:
            if self._unloaded:
                raise InvalidRequestError(f"model {self.name!r} has been unloaded; load it again")
            generator = self._engine.generator
        generator.check_prompt(prompt_ids)
        return generator.generate(prompt_ids, params)

    def _collect(self, prompt_ids: list[int], params: SamplingParams) -> InferResult:
        started = time.perf_counter()
        first_token_at = None
        steps: list[StepOutput] = []
        for step in self._start(prompt_ids, params):
            first_token_at = first_token_at or time.perf_counter()
            steps.append(step)
        ended = time.perf_counter()
        ttft = (first_token_at or ended) - started
        return InferResult(
            text="".join(step.text for step in steps),
            token_ids=tuple(step.token_id for step in steps),
            finish_reason=steps[-1].finish_reason,
            usage=Usage(len(prompt_ids), len(steps)),
            timings=Timings(ttft, (ended - ttft - started) / max(len(steps) - 1, 1), ended - started),
            backend=self.backend,
            precision=self.precision,
            model=self.name,
            logprobs=self._logprobs(steps) if params.logprobs is not None else None,
        )

    def _logprobs(self, steps: list[StepOutput]) -> tuple[TokenLogprob, ...]:
        decode = self._engine.tokenizer.decode
        return tuple(
            TokenLogprob(step.token_id, decode([step.token_id]), step.logprob,
                         tuple((decode([tid]), lp) for tid, lp in step.top_logprobs))
            for step in steps
        )

    def _unload(self) -> None:
        with self._lock:
            self._unloaded = True
            self._engine = _UnloadedEngine(self._engine)

    def __repr__(self) -> str:
        return f"Model(name={self.name!r}, path={str(self.path)!r}, precision={self.precision!r})"


class _UnloadedEngine:
    """What a Model keeps after unload: its description, not its weights."""

    backend_name = NativeEngine.backend_name

    def __init__(self, engine: NativeEngine) -> None:
        self.header = engine.header
        self.plan = engine.plan
        self.precision = engine.precision
        self.max_context = engine.max_context
        self.tokenizer = engine.tokenizer


def _check_text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _check_options(options: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"unknown argument(s) {', '.join(unknown)}; valid: {', '.join(sorted(allowed))}"
        )
