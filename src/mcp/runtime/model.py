"""``Model``: a loaded model in a Session, and its inference calls.

Generation options (all keyword-only, all optional; leaving one out takes the Session's
config default): ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``min_p``,
``repetition_penalty``, ``presence_penalty``, ``frequency_penalty``, ``seed``, ``stop``
(a string or a list of them), ``stop_token_ids``, ``ignore_eos``, ``logprobs`` (top-n per
token), ``response_format`` (structured output: OpenAI's ``response_format`` object, our
``regex``/``grammar`` ones, or a pydantic model class; engine/grammar.py). ``infer``,
``stream`` and ``infer_batch`` also take ``raw`` (default False: the
prompt is sent as one user message through the model's chat template when it has one, as
Ollama's generate does; True: the prompt text is tokenized as is) and ``system`` (a system
message).

Every call also takes the scheduling options ``slo_class`` ("critical", "high", "medium"
(default) or "low"), ``tenant`` (default "default") and ``timeout`` (seconds; the request
then ends with finish_reason "deadline").

``start_stream`` is the typed form of ``stream(raw=True)``/``chat_stream`` for a caller that
holds checked ``SamplingParams`` and ``RequestOptions`` (serving's one request path).

Every call goes through the model's ``EngineLoop`` (engine/loop.py): requests from all
threads are batched together step by step (continuous batching). Each result is what the
request would get alone (greedy: the same tokens; seeded: the same draw), exactly with fp32
weights; bf16/int4 GEMMs may round by batch shape, so a near-tie can go the other way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mcp.base.arguments import check_list, check_options, check_text
from mcp.base.errors import InvalidRequestError, MCPError
from mcp.base.result import EmbedResult, InferResult, Timings, Usage
from mcp.config.runtime import GenerationDefaults
from mcp.engine.contracts import EngineView, PrecisionPlanView, RequestLoop
from mcp.engine.embedding_loop import EmbeddingHandle, EmbeddingLoop
from mcp.engine.engine import NativeEngine
from mcp.engine.handle import RequestHandle, RequestOptions
from mcp.engine.hooks import HookHandle, HookRegistry
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.models import is_encoder
from mcp.engine.prompting import PROMPT_OPTIONS, SAMPLING_OPTIONS, chat_ids, prompt_encoder, token_logprobs
from mcp.engine.sampler import SamplingParams
from mcp.engine.sequence import check_prompt
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.spec import ModelHeader
from mcp.runtime.stream import TextStream

REQUEST_OPTIONS = frozenset(("slo_class", "tenant", "timeout"))
CHAT_OPTIONS = SAMPLING_OPTIONS | REQUEST_OPTIONS


class Model:
    """A model loaded by ``Session.load_model``. Safe to call from several threads."""

    def __init__(self, name: str, path: Path, engine: EngineView, defaults: GenerationDefaults,
                 loop_config: LoopConfig = LoopConfig(),
                 make_loop: Callable[[HookRegistry], RequestLoop] | None = None) -> None:
        """``engine`` is what the model reads of its engine (engine/contracts.py: a NativeEngine,
        or serving's view of one in a worker). ``make_loop(hooks)`` builds the ``RequestLoop``
        requests go through; by default an EngineLoop on ``engine`` in this process (serving's
        isolated workers give a WorkerLoop)."""
        self.name = name
        self.path = path
        self._engine = engine
        self._defaults = defaults
        self._hooks = HookRegistry()
        make_loop = make_loop or (lambda hooks: _in_process_loop(engine, loop_config, hooks, name))
        self._loop: RequestLoop | None = make_loop(self._hooks)
        # a decoder that declares a pooling also embeds, in process, through a loop of its own (a
        # worker's view has no header yet here: it is filled from the worker's ready frame)
        self._embedding_loop = (EmbeddingLoop(engine, loop_config, self._hooks, name)
                                if isinstance(engine, NativeEngine) and not engine.is_encoder and self.embeds else None)
        self._lock = threading.Lock()  # guards _engine/_loop against unload

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
    def embeds(self) -> bool:
        """True for a model that answers ``embed``: an encoder (which never generates), or a decoder
        that declares a pooling (which also generates)."""
        return is_encoder(self.header.architecture.architecture) or self.header.architecture.pooling is not None

    @property
    def defaults(self) -> GenerationDefaults:
        """The Session's generation defaults: what an option left out of a call takes."""
        return self._defaults

    @property
    def engine(self) -> EngineView:
        return self._engine

    @property
    def loop(self) -> RequestLoop:
        """The loop serving this model (``loop.stats()`` for its counters)."""
        return self._live_loop()

    def add_hook(self, name: str, callback: Callable[[Any], object]) -> HookHandle:
        """Call ``callback(event)`` at a lifecycle point of every request of this model:
        ``on_sequence_start``, ``on_token_generated`` or ``on_generation_complete`` (events in
        engine/hooks.py). Returns a handle whose ``remove()`` unregisters it. Callbacks run on
        the engine thread; one that raises is logged and the request goes on."""
        return self._hooks.add(name, callback)

    def tokenize(self, text: str) -> list[int]:
        return self._engine.tokenizer.encode(check_text(text, "text"))

    def infer(self, prompt: str, **options: Any) -> InferResult:
        """Generate a completion for ``prompt``; see the module docstring for options."""
        encode, params, request = self._prompt_request(options)
        handle = self._submit(encode(check_text(prompt, "prompt")), params, request)
        return self._wait(handle, params)

    def stream(self, prompt: str, **options: Any) -> TextStream:
        """Like ``infer``, as a ``TextStream`` of text deltas (with cancel/close/result)."""
        encode, params, request = self._prompt_request(options)
        handle = self._submit(encode(check_text(prompt, "prompt")), params, request)
        return TextStream(handle, lambda done: self._result(done, params))

    def chat(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> InferResult:
        """Answer a conversation (OpenAI-style ``{"role", "content"}`` messages)."""
        params, request = self._chat_request(options)
        return self._wait(self._submit(self._chat_ids(messages), params, request), params)

    def chat_stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> TextStream:
        params, request = self._chat_request(options)
        handle = self._submit(self._chat_ids(messages), params, request)
        return TextStream(handle, lambda done: self._result(done, params))

    def start_stream(self, prompt: str | Sequence[Mapping[str, Any]], params: SamplingParams,
                     request: RequestOptions, template_kwargs: Mapping[str, Any] | None = None,
                     continuation: str = "") -> TextStream:
        """The typed form of ``stream(raw=True)`` and ``chat_stream``, for a caller that holds
        checked parameters (serving's one request type): a text is tokenized as is, a
        conversation goes through the chat template (with ``template_kwargs``, its assistant
        turn started with ``continuation``). ``params`` are complete (``defaults`` already
        applied); nothing here reads keyword options."""
        if isinstance(prompt, str):
            prompt_ids = self._engine.tokenizer.encode(check_text(prompt, "prompt"))
        else:
            prompt_ids = chat_ids(self._engine.tokenizer, prompt, template_kwargs, continuation)
        handle = self._submit(prompt_ids, params, request)
        return TextStream(handle, lambda done: self._result(done, params))

    def infer_batch(self, prompts: Sequence[str], **options: Any) -> list[InferResult]:
        """Complete several prompts together; options as ``infer``, the same for all.

        Returns one InferResult per prompt, in order, each with its own finish_reason,
        usage and timings. A bad prompt is an InvalidRequestError naming its index, raised
        before anything is queued.
        """
        encode, params, request = self._prompt_request(options)
        texts = check_list(prompts, "prompts")
        prompts_ids = [encode(check_text(text, f"prompts[{i}]")) for i, text in enumerate(texts)]
        return self._run_batch(prompts_ids, params, request, "prompts")

    def chat_batch(self, conversations: Sequence[Sequence[Mapping[str, Any]]], **options: Any) -> list[InferResult]:
        """Answer several conversations together; options as ``chat``, the same for all."""
        params, request = self._chat_request(options)
        prompts_ids = []
        for index, messages in enumerate(check_list(conversations, "conversations")):
            try:
                prompts_ids.append(self._chat_ids(messages))
            except InvalidRequestError as error:
                raise type(error)(f"conversations[{index}]: {error}") from None
        return self._run_batch(prompts_ids, params, request, "conversations")

    def embed(self, texts: str | Sequence[str], **options: Any) -> EmbedResult:
        """One embedding per text (a string, or a list of them), as the model's pooling makes it
        (all-MiniLM-L6-v2: mean-pooled, unit length). Takes the scheduling options ``slo_class``,
        ``tenant`` and ``timeout``. A text longer than the model embeds is a ContextLengthError
        naming the limit; a model that generates text cannot embed (InvalidRequestError)."""
        check_options(options, REQUEST_OPTIONS)
        request = RequestOptions(**{k: v for k, v in options.items() if v is not None})
        items = [texts] if isinstance(texts, str) else check_list(texts, "texts")
        tokenizer = self._engine.tokenizer
        for index, text in enumerate(items):
            if check_text(text, f"texts[{index}]") == "":
                raise InvalidRequestError(f"texts[{index}] is empty: give at least one character to embed")
        inputs = [tokenizer.encode(text) for text in items]
        handle = self.start_embedding(inputs, request)
        try:
            done = handle.wait()
        except BaseException:
            handle.cancel()
            raise
        vectors = tuple(tuple(row) for row in done.vectors.tolist())
        return EmbedResult(vectors, done.num_tokens, self.name, done.total_s)

    def start_embedding(self, inputs_ids: Sequence[Sequence[int]], request: RequestOptions) -> EmbeddingHandle:  # or a worker's
        """The typed form of ``embed`` for a caller that holds token ids and checked options
        (serving): queued now, batched with other requests by the encoder's loop."""
        loop = self._live_loop()
        embed = getattr(self._embedding_loop or loop, "embed", None)  # an EmbeddingLoop, or a worker's of one
        if not self.embeds or embed is None:
            pooling = self.header.architecture.pooling
            why = ("declares a pooling, but a decoder embeds only in the server's process "
                   "(serving.isolation: none)" if pooling else "generates text and declares no pooling, so it cannot embed")
            raise InvalidRequestError(f"model {self.name!r} {why}; use an embedding model such as all-minilm-l6-v2")
        return embed(inputs_ids, request)

    # -- checking a call ------------------------------------------------------------------
    def _prompt_request(
        self, options: dict[str, Any]
    ) -> tuple[Callable[[str], list[int]], SamplingParams, RequestOptions]:
        """Check infer-style options once: how a prompt becomes ids, sampling and scheduling."""
        check_options(options, SAMPLING_OPTIONS | PROMPT_OPTIONS | REQUEST_OPTIONS)
        options = dict(options)
        raw = options.pop("raw", False)
        system = options.pop("system", None)
        params, request = self._chat_request(options)
        encode = prompt_encoder(self._engine.tokenizer, self.header.tokenizer.chat_template, raw, system)
        return encode, params, request

    def _chat_request(self, options: dict[str, Any]) -> tuple[SamplingParams, RequestOptions]:
        check_options(options, CHAT_OPTIONS)
        sampling = {key: value for key, value in options.items() if key in SAMPLING_OPTIONS}
        scheduling = {key: value for key, value in options.items() if key in REQUEST_OPTIONS and value is not None}
        return self._sampling(sampling), RequestOptions(**scheduling)

    def _chat_ids(self, messages: Any) -> list[int]:
        return chat_ids(self._engine.tokenizer, messages)

    def _sampling(self, options: dict[str, Any]) -> SamplingParams:
        merged = asdict(self._defaults)
        merged.update({key: value for key, value in options.items() if value is not None})
        return SamplingParams.from_user(**merged)

    # -- running it through the loop ------------------------------------------------------
    def _live_loop(self) -> RequestLoop:
        with self._lock:
            if self._loop is None:
                raise InvalidRequestError(f"model {self.name!r} has been unloaded; load it again")
            return self._loop

    def _submit(self, prompt_ids: list[int], params: SamplingParams, request: RequestOptions) -> RequestHandle:
        """Check the request and queue it now (not at the first ``next``)."""
        return self._live_loop().submit(prompt_ids, params, request)

    def _run_batch(self, prompts_ids: list[list[int]], params: SamplingParams, request: RequestOptions,
                   name: str) -> list[InferResult]:
        loop = self._live_loop()
        for index, prompt_ids in enumerate(prompts_ids):  # every prompt checked before any is queued
            try:
                check_prompt(prompt_ids, loop.max_context)
            except InvalidRequestError as error:
                raise type(error)(f"{name}[{index}]: {error}") from None
        handles: list[RequestHandle] = []
        try:
            for prompt_ids in prompts_ids:
                handles.append(loop.submit(prompt_ids, params, request))
        except BaseException as error:  # refused (CapacityError) part-way: take back what was queued
            for handle in handles:
                handle.cancel()
            if isinstance(error, MCPError):  # and wait until it has left the engine (at its next step)
                for handle in handles:
                    _wait_quietly(handle)
            raise
        try:
            return [self._wait(handle, params) for handle in handles]
        except BaseException:  # one failed (or the caller went away): the rest of the batch stops too
            for handle in handles:
                handle.cancel()
            raise

    def _wait(self, handle: RequestHandle, params: SamplingParams) -> InferResult:
        try:
            handle.wait()
        except BaseException:
            handle.cancel()  # the caller went away (or the request failed): stop it now
            raise
        return self._result(handle, params)

    def _result(self, handle: RequestHandle, params: SamplingParams) -> InferResult:
        outcome, steps = handle.outcome, handle.outputs
        assert outcome is not None, "a result is built once the request has ended"
        return InferResult(
            text="".join(step.text for step in steps) + outcome.tail_text,
            token_ids=tuple(step.token_id for step in steps),
            finish_reason=outcome.finish_reason,
            usage=Usage(outcome.num_prompt_tokens, len(steps), outcome.num_cached_tokens),
            timings=Timings.from_request(outcome.timings, len(steps)),
            backend=self.backend,
            precision=self.precision,
            model=self.name,
            logprobs=token_logprobs(self._engine.tokenizer, steps) if params.logprobs is not None else None,
        )

    def unload(self) -> None:
        """Close the loop (requests still running end with RequestCancelled) and drop the weights;
        the description (header, tokenizer, plan) stays readable and later calls raise a clear
        InvalidRequestError. Idempotent. ``Session.unload_model`` also forgets the model."""
        with self._lock:
            loop, self._loop = self._loop, None
            embedding_loop, self._embedding_loop = self._embedding_loop, None
            self._engine = UnloadedEngine.of(self._engine)
        for closing in (loop, embedding_loop):
            if closing is not None:
                closing.close()

    def __del__(self) -> None:
        # A model dropped without unload (a Session never closed) must not keep its loop thread,
        # weights and KV cache alive: the thread holds the loop, not the model.
        for name in ("_loop", "_embedding_loop"):
            loop = getattr(self, name, None)
            if loop is not None:
                loop.close()

    def __repr__(self) -> str:
        return f"Model(name={self.name!r}, path={str(self.path)!r}, precision={self.precision!r})"


def _in_process_loop(engine: EngineView, config: LoopConfig, hooks: HookRegistry, name: str) -> RequestLoop:
    """An encoder's requests go through its EmbeddingLoop, a decoder's through an EngineLoop."""
    if getattr(engine, "is_encoder", False):
        return EmbeddingLoop(engine, config, hooks, name)
    return EngineLoop(engine, config, hooks, name)


def _wait_quietly(handle: RequestHandle) -> None:
    try:
        handle.wait()
    except MCPError:
        pass  # it was ended on purpose; how does not matter here


@dataclass(frozen=True)
class UnloadedEngine:
    """What a Model keeps after unload (an ``EngineView``): its description, not its weights."""

    header: ModelHeader
    tokenizer: Tokenizer
    precision: str
    max_context: int
    plan: PrecisionPlanView
    backend_name: str = NativeEngine.backend_name

    @classmethod
    def of(cls, engine: EngineView) -> UnloadedEngine:
        if isinstance(engine, UnloadedEngine):
            return engine
        return cls(engine.header, engine.tokenizer, engine.precision, engine.max_context, engine.plan,
                   engine.backend_name)
