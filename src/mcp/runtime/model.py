"""``Model``: a loaded model in a Session, and its inference calls.

Generation options (all keyword-only, all optional; leaving one out takes the Session's
config default): ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``min_p``,
``repetition_penalty``, ``presence_penalty``, ``frequency_penalty``, ``seed``, ``stop``
(a string or a list of them), ``stop_token_ids``, ``ignore_eos``, ``logprobs`` (top-n per
token). ``infer``, ``stream`` and ``infer_batch`` also take ``raw`` (default False: the
prompt is sent as one user message through the model's chat template when it has one, as
Ollama's generate does; True: the prompt text is tokenized as is) and ``system`` (a system
message).

``infer_batch`` / ``chat_batch`` decode all their prompts together, one forward per step
for every sequence still running; each result is what ``infer`` / ``chat`` would return
for that prompt alone (greedy: the same tokens; seeded: the same draw), exactly with fp32
weights; bf16/int4 GEMMs may round by batch shape, so a near-tie can go the other way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
        encode, params = self._prompt_request(options)
        return self._collect(encode(_check_text(prompt, "prompt")), params)

    def stream(self, prompt: str, **options: Any) -> Iterator[str]:
        """Like ``infer``, yielding text deltas as they are generated."""
        encode, params = self._prompt_request(options)
        steps = self._start([encode(_check_text(prompt, "prompt"))], params, None)
        return (outputs[0].text for outputs in steps if outputs[0].text)

    def chat(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> InferResult:
        """Answer a conversation (OpenAI-style ``{"role", "content"}`` messages)."""
        _check_options(options, SAMPLING_OPTIONS)
        return self._collect(self._chat_ids(messages), self._sampling(options))

    def chat_stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Iterator[str]:
        _check_options(options, SAMPLING_OPTIONS)
        steps = self._start([self._chat_ids(messages)], self._sampling(options), None)
        return (outputs[0].text for outputs in steps if outputs[0].text)

    def infer_batch(self, prompts: Sequence[str], **options: Any) -> list[InferResult]:
        """Complete several prompts in one batch; options as ``infer``, the same for all.

        Returns one InferResult per prompt, in order, each with its own finish_reason,
        usage and timings (measured from the start of the batch). A bad prompt is an
        InvalidRequestError naming its index, raised before anything runs.
        """
        encode, params = self._prompt_request(options)
        texts = _check_list(prompts, "prompts")
        return self._collect_batch([encode(_check_text(text, f"prompts[{i}]")) for i, text in enumerate(texts)],
                                   params, "prompts")

    def chat_batch(self, conversations: Sequence[Sequence[Mapping[str, Any]]], **options: Any) -> list[InferResult]:
        """Answer several conversations in one batch; options as ``chat``, the same for all."""
        _check_options(options, SAMPLING_OPTIONS)
        params = self._sampling(options)
        prompts_ids = []
        for index, messages in enumerate(_check_list(conversations, "conversations")):
            try:
                prompts_ids.append(self._chat_ids(messages))
            except InvalidRequestError as error:
                raise type(error)(f"conversations[{index}]: {error}") from None
        return self._collect_batch(prompts_ids, params, "conversations")

    def _prompt_request(self, options: dict[str, Any]) -> tuple[Callable[[str], list[int]], SamplingParams]:
        """Check infer-style options once: how a prompt becomes ids, and the sampling params."""
        _check_options(options, SAMPLING_OPTIONS | PROMPT_OPTIONS)
        options = dict(options)
        raw = options.pop("raw", False)
        system = options.pop("system", None)
        params = self._sampling(options)
        if raw or not self.header.tokenizer.chat_template:
            if system is not None:
                raise InvalidRequestError("system needs the chat template; it cannot be used with raw=True")
            return self._engine.tokenizer.encode, params
        messages = [{"role": "system", "content": _check_text(system, "system")}] if system is not None else []
        return (lambda prompt: self._chat_ids([*messages, {"role": "user", "content": prompt}])), params

    def _chat_ids(self, messages: Any) -> list[int]:
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidRequestError("messages must be a list of {'role': ..., 'content': ...} mappings")
        tokenizer = self._engine.tokenizer
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        return tokenizer.encode(text, add_special_tokens=False)

    def _sampling(self, options: dict[str, Any]) -> SamplingParams:
        merged = asdict(self._defaults)
        merged.update({key: value for key, value in options.items() if value is not None})
        return SamplingParams.from_user(**merged)

    def _start(
        self, prompts_ids: list[list[int]], params: SamplingParams, name: str | None
    ) -> Iterator[list[StepOutput | None]]:
        """Check the request now (not at the first ``next``) and return its steps.

        ``name`` is what a batch's errors call its prompts; None for a single request.

        Each generation owns its KV cache and the weights are read-only, so calls from
        several threads, or an ``infer`` while a ``stream`` is open, run side by side.
        A generation started before ``unload`` finishes on the weights it started with.
        """
        with self._lock:
            if self._unloaded:
                raise InvalidRequestError(f"model {self.name!r} has been unloaded; load it again")
            generator = self._engine.generator
        if name is None:
            generator.check_prompt(prompts_ids[0])
        else:
            generator.check_batch(prompts_ids, name)
        return generator.generate_batch(prompts_ids, params)

    def _collect(self, prompt_ids: list[int], params: SamplingParams) -> InferResult:
        return self._collect_batch([prompt_ids], params, None)[0]

    def _collect_batch(
        self, prompts_ids: list[list[int]], params: SamplingParams, name: str | None
    ) -> list[InferResult]:
        started = time.perf_counter()
        steps: list[list[StepOutput]] = [[] for _ in prompts_ids]
        first_at: list[float] = [0.0] * len(prompts_ids)
        ended_at: list[float] = [0.0] * len(prompts_ids)
        for outputs in self._start(prompts_ids, params, name):
            now = time.perf_counter()
            for index, step in enumerate(outputs):
                if step is not None:
                    first_at[index] = first_at[index] or now
                    ended_at[index] = now
                    steps[index].append(step)
        return [
            self._result(prompt_ids, seq_steps, params, Timings(
                first - started, (ended - first) / max(len(seq_steps) - 1, 1), ended - started))
            for prompt_ids, seq_steps, first, ended in zip(prompts_ids, steps, first_at, ended_at)
        ]

    def _result(self, prompt_ids: list[int], steps: list[StepOutput], params: SamplingParams,
                timings: Timings) -> InferResult:
        return InferResult(
            text="".join(step.text for step in steps),
            token_ids=tuple(step.token_id for step in steps),
            finish_reason=steps[-1].finish_reason,
            usage=Usage(len(prompt_ids), len(steps)),
            timings=timings,
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


def _check_list(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise InvalidRequestError(f"{name} must be a list, got {type(values).__name__}")
    if not values:
        raise InvalidRequestError(f"{name} is empty: give at least one")
    return list(values)


def _check_options(options: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"unknown argument(s) {', '.join(unknown)}; valid: {', '.join(sorted(allowed))}"
        )
