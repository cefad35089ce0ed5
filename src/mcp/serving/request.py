"""``ServingRequest``: the one typed request both transports build and everything after them takes.

The HTTP adapter (``http/openai_api.py``) and the gRPC adapter (``grpc/convert.py``) each turn
their wire message into a ``ServingRequest``, checked on construction: its lifecycle
(``reply.py``: admission, the governance plane, the audit record) and its generation
(``generation.py``) read its typed fields, never a dict of options. ``Sampling`` holds the sampling fields a client
may set, one for one with the engine's ``SamplingParams`` (and checked by its bounds); a field
left ``None`` takes the model's default when the request runs (``Sampling.resolve``).
Features of the request that both transports carry belong here, once, beside the sampling
fields: tools (``tools/spec.py``), template keyword arguments, metadata for the record, and the
published fields a client sent that have no effect here (``ignored_fields``: the HTTP header
``x-mcp-ignored-fields`` names them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import GenerationDefaults
from mcp.engine.grammar import ResponseFormat
from mcp.engine.handle import RequestOptions
from mcp.engine.params import MAX_COUNT, SamplingParams
from mcp.engine.scheduler.slo import SLOClass
from mcp.serving.errors import FieldError
from mcp.serving.tools.spec import AUTO, Tool, ToolChoice, checked_choice

# chat_template_kwargs a client may not set: the server sets them (the conversation, the tools)
RESERVED_TEMPLATE_KWARGS = frozenset({"messages", "add_generation_prompt", "tools", "documents"})

TRACE_HEADERS = ("traceparent", "tracestate")  # the W3C trace context, from HTTP headers or gRPC metadata


@dataclass(frozen=True)
class Prompt:
    """A chat conversation (``{"role", "content"}`` messages), or a raw text prompt (completions)."""

    messages: Sequence[Mapping[str, Any]] | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.text is None):
            raise InvalidRequestError("a prompt is either messages or a text, not both or neither")

    def texts(self) -> list[str]:
        """What governance reads and may redact: each message's content, or the text."""
        return [m["content"] for m in self.messages] if self.messages is not None else [self.text or ""]

    def with_texts(self, texts: Sequence[str]) -> Prompt:
        """The same prompt with ``texts`` (as many as ``texts()`` gave) in place of its own."""
        if self.messages is None:
            return Prompt(text=texts[0])
        return Prompt(messages=[{**m, "content": t} for m, t in zip(self.messages, texts, strict=True)])


@dataclass(frozen=True)
class Sampling:
    """The sampling fields of a request, as ``SamplingParams`` names and bounds them; ``None``:
    the model's default. A value out of bounds is a ``FieldError`` naming the field."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    ignore_eos: bool = False
    logprobs: int | None = None  # top-n alternatives per token; None: no logprobs
    response_format: ResponseFormat | None = None  # None or text: free; else the grammar masks every token
    logit_bias: tuple[tuple[int, float], ...] | None = None  # (token id, bias in [-100, 100]) pairs

    def __post_init__(self) -> None:
        for name, value in self._given().items():  # one at a time: the error names its field
            try:
                SamplingParams.from_user(**{name: value})
            except InvalidRequestError as error:
                raise FieldError(str(error), name) from None

    def resolve(self, defaults: GenerationDefaults, choice: int = 0) -> SamplingParams:
        """The engine's parameters for choice ``choice`` of the request: the given fields over
        ``defaults``. With a seed, choice j samples with seed + j, so the n choices differ and
        each is reproducible."""
        given = self._given()
        if choice and self.seed is not None:
            given["seed"] = self.seed + choice
        return SamplingParams.from_user(**{**asdict(defaults), **given})

    def _given(self) -> dict[str, Any]:
        given = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        if not self.ignore_eos:
            del given["ignore_eos"]
        return given


@dataclass(frozen=True)
class ServingRequest:
    """One inference request from either transport: what to run, how to sample, for whom."""

    request_id: str  # chatcmpl-…, cmpl-… (HTTP) or infer-… (gRPC): the audit record's and the answer's id
    route: str  # "POST /v1/chat/completions", "grpc /mcp.v1.InferenceService/Infer": for the audit record
    chat: bool  # a conversation through the chat template (else raw text completions)
    prompts: tuple[Prompt, ...]
    sampling: Sampling
    tenant: str  # the caller's tenant
    slo_class: SLOClass | None = None  # None: the engine's default class
    timeout_s: float | None = None  # the deadline: the request ends with "deadline" this long after it starts
    n: int = 1  # choices per prompt
    user: str | None = None  # the caller's end user, if it says (the audit record pseudonymizes it)
    model: str | None = None  # name or name:version; None: the server's default
    trace_context: Mapping[str, str] = field(default_factory=dict)  # traceparent / tracestate, if sent
    attributes: Mapping[str, Any] = field(default_factory=dict)  # gen_ai.request.* for the span
    tools: tuple[Tool, ...] = ()  # functions the model may call (chat only)
    tool_choice: ToolChoice = AUTO
    parallel_tool_calls: bool = True  # false: at most one call per answer
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)  # chat_template_kwargs, to the template
    metadata: Mapping[str, str] = field(default_factory=dict)  # the client's tags, for the span and the record
    ignored_fields: tuple[str, ...] = ()  # published fields sent that have no effect here

    def __post_init__(self) -> None:
        if not self.prompts:
            raise FieldError("the request has no prompt; give at least one", "prompt")
        if any((p.messages is not None) != self.chat for p in self.prompts):
            raise InvalidRequestError("a chat request takes conversations, a completion request texts")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or not 1 <= self.n <= MAX_COUNT:
            raise FieldError(f"n is {self.n!r}; give an integer in [1, {MAX_COUNT}]", "n")
        if self.sampling.max_tokens is None:
            raise InvalidRequestError("a served request states max_tokens (the server's default or limit)")
        RequestOptions(tenant=self.tenant, timeout=self.timeout_s)  # checks both
        if (self.tools or self.tool_choice.forced) and not self.chat:
            raise FieldError("tools are for chat requests (messages), not text completions", "tools")
        checked_choice(self.tool_choice, self.tools)
        reserved = sorted(RESERVED_TEMPLATE_KWARGS & set(self.template_kwargs))
        if reserved:
            raise FieldError(f"chat_template_kwargs sets {', '.join(reserved)}, which the server sets; "
                             "leave them out", "chat_template_kwargs")

    @property
    def max_tokens(self) -> int:
        assert self.sampling.max_tokens is not None, "checked on construction"
        return self.sampling.max_tokens

    @property
    def operation(self) -> str:
        """The GenAI operation name: ``chat`` or ``text_completion``."""
        return "chat" if self.chat else "text_completion"

    @property
    def logprobs(self) -> bool:
        return self.sampling.logprobs is not None

    @property
    def num_choices(self) -> int:
        return len(self.prompts) * self.n

    def scheduling(self) -> RequestOptions:
        """How the engine schedules each of its sequences."""
        slo_class = SLOClass.MEDIUM if self.slo_class is None else self.slo_class
        return RequestOptions(slo_class=slo_class, tenant=self.tenant, timeout=self.timeout_s)

    def texts(self) -> tuple[str, ...]:
        """Every prompt's texts, in order (what the input policy reads)."""
        return tuple(text for prompt in self.prompts for text in prompt.texts())

    def with_texts(self, texts: Sequence[str]) -> ServingRequest:
        """The same request with its prompts' texts replaced (a redaction), in ``texts()`` order."""
        remaining = list(texts)
        prompts = []
        for prompt in self.prompts:
            count = len(prompt.texts())
            prompts.append(prompt.with_texts(remaining[:count]))
            del remaining[:count]
        return replace(self, prompts=tuple(prompts))


def trace_context(headers: Mapping[str, str]) -> dict[str, str]:
    """The W3C trace context in HTTP headers or gRPC metadata (names compared in lower case)."""
    return {k.lower(): v for k, v in headers.items() if k.lower() in TRACE_HEADERS}
