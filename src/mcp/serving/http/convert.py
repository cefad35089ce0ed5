"""OpenAI request bodies to the one typed request (``ServingRequest``), checked against the server's limits.

The schema (``schemas.py``) has bounded every field already; here the server's own limits are
applied (prompt size, ``max_tokens``, ``n``, choices per request) and the ``x-sla-class``
header is read. A bad field is a FieldError naming it as the body spells it (OpenAI's error
``param``). The gRPC adapter's twin is ``grpc/convert.py``: same limits, same wording.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import RuntimeConfig
from mcp.engine.grammar import ResponseFormat, response_format_of
from mcp.engine.params import MAX_COUNT
from mcp.engine.scheduler.slo import SLOClass
from mcp.serving.errors import FieldError
from mcp.serving.http import fields as published
from mcp.serving.http import schemas as s
from mcp.serving.request import Prompt, Sampling, ServingRequest, trace_context
from mcp.serving.tools.spec import AUTO, Tool, ToolChoice

_MEDIA = {"image_url": "images", "image": "images", "input_image": "images", "input_audio": "audio",
          "audio": "audio", "file": "files"}

Body = s.ChatCompletionRequest | s.CompletionRequest


def request_of(body: Body, route: str, headers: Mapping[str, str], sla_class: str | None, config: RuntimeConfig,
               tenant: str) -> ServingRequest:
    """The body (with the request's route, headers and ``x-sla-class``) as the request serving
    runs for ``tenant``."""
    chat = isinstance(body, s.ChatCompletionRequest)
    prompts = _conversation(body, config) if chat else _texts(body, config)
    if chat:
        logprobs = (body.top_logprobs or 0) if body.logprobs else None
        sampling = _sampling(body, body.max_completion_tokens or body.max_tokens, logprobs, config)
    else:
        sampling = _sampling(body, body.max_tokens, body.logprobs, config)
    if body.n > config.serving.limits.max_n:
        raise FieldError(f"n is {body.n}; this server allows at most {config.serving.limits.max_n}", "n")
    slo_class = requested_slo_class(sla_class)
    if not chat:
        _check_num_choices(len(prompts), body.n, config)
    ignored = published.CHAT_IGNORED if chat else published.COMPLETION_IGNORED
    metadata = (body.metadata or {}) if chat else {}
    return ServingRequest(
        request_id=f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}", route=route, chat=chat,
        prompts=prompts, sampling=sampling, tenant=tenant, slo_class=slo_class,
        timeout_s=config.serving.request_timeout_s, n=body.n, user=body.user, model=body.model or None,
        trace_context=trace_context(headers),
        attributes={"gen_ai.request.temperature": body.temperature, "gen_ai.request.top_p": body.top_p,
                    "gen_ai.request.top_k": body.top_k, "gen_ai.request.seed": body.seed,
                    **{f"mcp.request.metadata.{k}": v for k, v in metadata.items()}},
        metadata=metadata, ignored_fields=tuple(sorted(body.model_fields_set & ignored)),
        **(_tooling(body) if chat else {}))


def _tooling(body: s.ChatCompletionRequest) -> dict:
    """The tool fields (``tools``/``tool_choice``, or the legacy ``functions``/``function_call``)
    and the template's keyword arguments, typed."""
    if body.functions is not None and body.tools is not None:
        raise FieldError("functions is the legacy form of tools; send one of them, not both", "functions")
    if body.function_call is not None and body.tool_choice is not None:
        raise FieldError("function_call is the legacy form of tool_choice; send one of them", "function_call")
    definitions = body.functions if body.functions is not None else [t.function for t in body.tools or ()]
    tools = tuple(Tool(f.name, f.description, f.parameters or {}) for f in definitions)
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise FieldError("tools name the same function twice; give each a distinct name", "tools")
    choice = body.tool_choice if body.tool_choice is not None else body.function_call
    return {"tools": tools, "tool_choice": _tool_choice(choice),
            "parallel_tool_calls": body.parallel_tool_calls is not False and body.functions is None,
            "template_kwargs": body.chat_template_kwargs or {}}


def _tool_choice(choice: str | s.NamedToolChoice | s.FunctionName_ | None) -> ToolChoice:
    if choice is None:
        return AUTO
    if isinstance(choice, str):
        return ToolChoice(choice)  # type: ignore[arg-type]
    return ToolChoice("function", choice.function.name if isinstance(choice, s.NamedToolChoice) else choice.name)


def _conversation(body: s.ChatCompletionRequest, config: RuntimeConfig) -> tuple[Prompt, ...]:
    messages = [_message(i, m) for i, m in enumerate(body.messages)]
    num_chars = sum(len(m["content"]) + len(str(m.get("tool_calls") or "")) for m in messages)
    check_prompt_size(num_chars, config, "messages")
    return (Prompt(messages=messages),)


def _message(index: int, message: s.ChatMessage) -> dict:
    """One message as the chat template reads it: developer is system, legacy function is tool,
    an assistant turn's calls (``tool_calls`` or legacy ``function_call``) kept."""
    role = {"developer": "system", "function": "tool"}.get(message.role, message.role)
    calls = [c.model_dump() for c in message.tool_calls or ()]
    if message.function_call is not None:
        calls.append({"id": f"call_{index}", "type": "function", "function": message.function_call.model_dump()})
    if message.content is None and not (role == "assistant"):
        raise FieldError(f"messages[{index}].content is null; only an assistant turn may leave it out",
                         f"messages[{index}].content")
    out: dict = {"role": role, "content": _text(message.content, index)}
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = message.tool_call_id or ""
        if message.name:
            out["name"] = message.name
    return out


def _texts(body: s.CompletionRequest, config: RuntimeConfig) -> tuple[Prompt, ...]:
    if body.echo:
        raise FieldError("echo is not supported; leave it out or false", "echo")
    texts = [body.prompt] if isinstance(body.prompt, str) else body.prompt
    if not texts:
        raise FieldError("prompt is an empty list; give at least one prompt", "prompt")
    check_prompt_size(sum(len(t) for t in texts), config, "prompt")
    return tuple(Prompt(text=t) for t in texts)


def _text(content: str | list | None, index: int) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, part in enumerate(content):
        if part.type in _MEDIA:
            raise FieldError(f"messages[{index}].content[{j}] is an {part.type} part: this model takes no "
                             f"{_MEDIA[part.type]}; send text parts only", f"messages[{index}].content[{j}]")
        texts.append(part.text if part.type == "text" else part.refusal)
    return "".join(texts)


def check_prompt_size(num_chars: int, config: RuntimeConfig, param: str) -> None:
    limit = config.serving.limits.max_prompt_chars
    if num_chars > limit:
        raise FieldError(f"{param} has {num_chars} characters; this server takes at most {limit} "
                         "(serving.limits.max_prompt_chars)", param)


def _check_num_choices(num_prompts: int, n: int, config: RuntimeConfig) -> None:
    """One request starts n sequences per prompt: 5,000 prompts must not take the whole engine."""
    limit = config.serving.limits.max_choices
    if num_prompts * n > limit:
        raise FieldError(f"prompt has {num_prompts} prompts and n is {n}: {num_prompts * n} choices; this server "
                         f"takes at most {limit} per request (serving.limits.max_choices); send fewer", "prompt")


def _sampling(body: Body, max_tokens: int | None, logprobs: int | None, config: RuntimeConfig) -> Sampling:
    """The body's sampling fields (bounded by the schema), ``max_tokens`` within the server's limit."""
    limit = config.serving.limits.max_tokens
    if max_tokens is not None and max_tokens > limit:
        raise FieldError(f"max_tokens is {max_tokens}; this server allows at most {limit}", "max_tokens")
    if max_tokens is None:  # the config's default, within the server's limit
        max_tokens = min(config.generation.max_tokens, limit)
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop) if body.stop is not None else None
    return Sampling(max_tokens=max_tokens, temperature=body.temperature, top_p=body.top_p, top_k=body.top_k,
                    min_p=body.min_p, repetition_penalty=body.repetition_penalty,
                    presence_penalty=body.presence_penalty, frequency_penalty=body.frequency_penalty,
                    seed=body.seed, stop=stop, ignore_eos=body.ignore_eos, logprobs=logprobs,
                    response_format=_response_format(body.response_format),
                    logit_bias=_logit_bias(body.logit_bias))


def _response_format(field: s.ResponseFormat | None) -> ResponseFormat | None:
    """The body's ``response_format`` compiled; one the grammar engine cannot compile is a 400
    naming the problem."""
    if field is None:
        return None
    try:
        return response_format_of(field.model_dump(by_alias=True))
    except InvalidRequestError as error:
        raise FieldError(str(error), "response_format") from None


def _logit_bias(bias: dict[str, float] | None) -> tuple[tuple[int, float], ...] | None:
    if not bias:
        return None
    biased = sorted((int(token_id), value) for token_id, value in bias.items())
    if biased[-1][0] > MAX_COUNT:
        raise FieldError(f"logit_bias names token {biased[-1][0]}; token ids are at most {MAX_COUNT}", "logit_bias")
    return tuple(biased)


def requested_slo_class(header: str | None) -> SLOClass | None:
    if header is None:
        return None
    try:
        return SLOClass.parse(header)
    except InvalidRequestError as error:
        raise FieldError(f"header x-sla-class: {error}", "x-sla-class") from None
