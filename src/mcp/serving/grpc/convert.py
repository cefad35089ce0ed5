"""``mcp.v1`` messages to the one typed request (``ServingRequest``) and back, checked against the server's limits.

Checks mirror the HTTP API's (same limits, same wording); a bad field is a FieldError naming
it as the proto spells it (``sampling.max_tokens``, ``chat.messages[1].role``), which the
client gets as INVALID_ARGUMENT with the name in ``x-error-param``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from mcp.base.arguments import check_model_name, check_model_source
from mcp.base.errors import InvalidRequestError
from mcp.base.result import InferResult
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel
from mcp.engine.grammar import ResponseFormat
from mcp.engine.params import MAX_COUNT
from mcp.engine.scheduler.slo import SLOClass
from mcp.engine.sequence import StepOutput
from mcp.serving.errors import FieldError
from mcp.serving.generation import ChoiceEvent
from mcp.serving.grpc import tools
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc.context import Metadata, RequestContext
from mcp.serving.host import ModelVersion
from mcp.serving.reply import Reply
from mcp.serving.request import Prompt, Sampling, ServingRequest, trace_context
from mcp.serving.tools.plan import ToolStream

Decode = Callable[[int], str]
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
PRECISIONS = ("auto", "fp32", "bf16", "f16", "int4", "int8")
MAX_TOP_LOGPROBS = 20
_OPTIONAL_SAMPLING = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                      "frequency_penalty", "seed")
_FINISH = {"stop": pb.FINISH_REASON_STOP, "length": pb.FINISH_REASON_LENGTH,
           "cancelled": pb.FINISH_REASON_CANCELLED, "deadline": pb.FINISH_REASON_DEADLINE,
           "content_filter": pb.FINISH_REASON_CONTENT_FILTER, "tool_calls": pb.FINISH_REASON_TOOL_CALLS}


# -- requests -------------------------------------------------------------------------------
def prompt_of(request: pb.InferRequest, config: RuntimeConfig) -> Prompt:
    """The request's raw prompt or conversation, within ``serving.limits.max_prompt_chars``."""
    kind = request.WhichOneof("input")
    if kind is None:
        raise FieldError("the request has no input: set prompt (raw text) or chat (a conversation)", "input")
    if kind == "prompt":
        _check_size(len(request.prompt), config, "prompt")
        return Prompt(text=request.prompt)
    if not request.chat.messages:
        raise FieldError("chat.messages is empty; send at least one message", "chat.messages")
    messages = [_message(m, i) for i, m in enumerate(request.chat.messages)]
    _check_size(sum(len(m["content"]) for m in messages), config, "chat.messages")
    return Prompt(messages=messages)


def _message(message: pb.ChatMessage, index: int) -> dict:
    role = ROLES.get(message.role)
    if role is None:
        raise FieldError(f"chat.messages[{index}].role is {message.role!r}; use one of "
                         f"{', '.join(ROLES)}", f"chat.messages[{index}].role")
    out: dict = {"role": role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = tools.message_calls(message, index)
    if role == "tool":
        out["tool_call_id"] = message.tool_call_id
        if message.name:
            out["name"] = message.name
    return out


def _check_size(num_chars: int, config: RuntimeConfig, param: str) -> None:
    limit = config.serving.limits.max_prompt_chars
    if num_chars > limit:
        raise FieldError(f"{param} has {num_chars} characters; this server takes at most {limit} "
                         "(serving.limits.max_prompt_chars)", param)


def request_of(request: pb.InferRequest, context: RequestContext, metadata: Metadata | None,
               config: RuntimeConfig, route: str) -> ServingRequest:
    """The call as the one typed request serving runs: its prompt, its sampling within the
    server's limits, the model it names, and the caller's tenant, class and deadline."""
    prompt = prompt_of(request, config)
    sampling = sampling_of(request.sampling, config)
    return ServingRequest(
        request_id=f"infer-{uuid.uuid4().hex}", route=route, chat=prompt.messages is not None, prompts=(prompt,),
        sampling=sampling, tenant=context.caller.tenant.name,
        slo_class=None if context.sla_class is None else SLOClass.parse(context.sla_class),
        timeout_s=config.serving.request_timeout_s, user=request.user or None, model=context.model_ref(request.model),
        trace_context=trace_context(dict(metadata or ())),
        attributes={"gen_ai.request.temperature": sampling.temperature, "gen_ai.request.seed": sampling.seed},
        **tools.tooling_of(request))


def sampling_of(sampling: pb.SamplingParams, config: RuntimeConfig) -> Sampling:
    """The request's sampling within the server's limits; a bad field is named as the proto
    spells it (``sampling.temperature``)."""
    given = {name: getattr(sampling, name) if sampling.HasField(name) else None for name in _OPTIONAL_SAMPLING}
    if (given["top_k"] or 0) > MAX_COUNT:
        raise FieldError(f"sampling.top_k is {given['top_k']}; at most {MAX_COUNT} (0 = off)", "sampling.top_k")
    max_tokens, logprobs = _max_tokens(sampling, config), _logprobs(sampling)
    response_format = _response_format(sampling)
    try:
        return Sampling(**given, max_tokens=max_tokens, stop=tuple(sampling.stop) or None,
                        ignore_eos=sampling.ignore_eos, logprobs=logprobs, response_format=response_format,
                        logit_bias=tuple(sorted(sampling.logit_bias.items())) or None)
    except FieldError as error:
        raise FieldError(str(error), f"sampling.{error.param}") from None


def _response_format(sampling: pb.SamplingParams) -> ResponseFormat | None:
    """``sampling.response_format`` compiled; one the engine cannot compile is INVALID_ARGUMENT."""
    if not sampling.HasField("response_format"):
        return None
    message = sampling.response_format
    kind = message.WhichOneof("format")
    try:
        if kind == "json_schema":
            return ResponseFormat("json_schema", schema=message.json_schema.schema, strict=message.json_schema.strict)
        if kind in ("regex", "grammar"):
            return ResponseFormat(kind, pattern=getattr(message, kind))
        return ResponseFormat(kind or "text")
    except InvalidRequestError as error:
        raise FieldError(str(error), "sampling.response_format") from None


def _max_tokens(sampling: pb.SamplingParams, config: RuntimeConfig) -> int:
    limit = config.serving.limits.max_tokens
    if not sampling.HasField("max_tokens"):
        return min(config.generation.max_tokens, limit)
    if sampling.max_tokens < 1:
        raise FieldError("sampling.max_tokens is 0; ask for at least 1 token", "sampling.max_tokens")
    if sampling.max_tokens > limit:
        raise FieldError(f"sampling.max_tokens is {sampling.max_tokens}; this server allows at most {limit}",
                         "sampling.max_tokens")
    return sampling.max_tokens


def _logprobs(sampling: pb.SamplingParams) -> int | None:
    if not sampling.HasField("logprobs"):
        return None
    if sampling.logprobs > MAX_TOP_LOGPROBS:
        raise FieldError(f"sampling.logprobs is {sampling.logprobs}; ask for at most {MAX_TOP_LOGPROBS} "
                         "alternatives per token", "sampling.logprobs")
    return sampling.logprobs


def served_model(request: pb.LoadModelRequest) -> ServedModel:
    for name in ("name", "source"):
        if not getattr(request, name):
            raise FieldError(f"{name} is empty; LoadModel needs the model's name and source", name)
    if request.precision and request.precision not in PRECISIONS:
        raise FieldError(f"precision {request.precision!r} is not one of {', '.join(PRECISIONS)}", "precision")
    checked_name(request.name, "name")
    if request.version:
        checked_name(request.version, "version")
    _checked(check_model_source, request.source, "source")
    return ServedModel(request.name, request.source, request.version or "1", request.precision or None)


def checked_name(value: str, param: str) -> str:
    """A model name or version as docs/api.md defines it, else INVALID_ARGUMENT naming ``param``."""
    return _checked(check_model_name, value, param)


def _checked(check: Callable[[str, str], str], value: str, param: str) -> str:
    try:
        return check(value, param)
    except InvalidRequestError as error:
        raise FieldError(str(error), param) from None


# -- responses ------------------------------------------------------------------------------
def infer_response(reply: Reply, result: InferResult, steps: Sequence[StepOutput]) -> pb.InferResponse:
    """The whole answer of a unary ``Infer``: with tools, its calls parsed out of the text."""
    answer = reply.generation.tools.parse(result.text)
    return pb.InferResponse(id=reply.request.request_id, model=reply.version.key, text=answer.content or "",
                            token_ids=result.token_ids, finish_reason=finish_reason(result, answer.tool_calls),
                            usage=usage(result), logprobs=logprobs(steps, reply.decode) if reply.decode else [],
                            tool_calls=tools.calls_of(answer))


def stream_response(reply: Reply, event: ChoiceEvent, tool_stream: ToolStream | None = None) -> pb.InferStreamResponse:
    """One message of ``InferStream``: a step's token and text; the last one with the finish reason
    and usage (and, with tools, the calls: text that may start one is held back until then)."""
    text = tool_stream.feed(event.text) if tool_stream is not None else event.text
    message = pb.InferStreamResponse(id=reply.request.request_id, model=reply.version.key, text=text)
    if event.step is not None:
        message.token_ids.append(event.step.token_id)
        if reply.decode:
            message.logprobs.extend(logprobs([event.step], reply.decode))
    if event.result is not None:
        calls = ()
        if tool_stream is not None:
            answer = tool_stream.finish()
            message.text += answer.content or ""
            message.tool_calls.extend(tools.calls_of(answer))
            calls = answer.tool_calls
        message.finish_reason = finish_reason(event.result, calls)
        message.usage.CopyFrom(usage(event.result))
    return message


def finish_reason(result: InferResult, calls: Sequence[object] = ()) -> pb.FinishReason:
    return pb.FINISH_REASON_TOOL_CALLS if calls else _FINISH[result.finish_reason]


def usage(result: InferResult) -> pb.Usage:
    used = result.usage
    return pb.Usage(prompt_tokens=used.prompt_tokens, completion_tokens=used.completion_tokens,
                    total_tokens=used.total_tokens, cached_prompt_tokens=used.cached_tokens)


def logprobs(steps: Sequence[StepOutput], decode: Decode) -> list[pb.TokenLogprob]:
    return [pb.TokenLogprob(token_id=step.token_id, token=decode(step.token_id), logprob=_logprob(step.logprob),
                            top_logprobs=[pb.TopLogprob(token_id=t, token=decode(t), logprob=lp)
                                          for t, lp in step.top_logprobs])
            for step in steps]


def _logprob(value: float | None) -> float:
    return 0.0 if value is None else value


def model_version(version: ModelVersion, current: bool, with_source: bool) -> pb.ModelVersion:
    return pb.ModelVersion(name=version.name, version=version.version, current=current,
                           in_flight=version.in_flight, load_to_ready_s=version.load_to_ready_s,
                           loaded_at_unix_s=int(version.loaded_at), source=version.source if with_source else "")
