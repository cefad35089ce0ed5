"""From an OpenAI request to the facts the routes test (``RequestContext``), and the body sent on.

Only what routing needs is checked here; the upstream checks the rest and its 400 comes back
as it is. ``input_tokens`` is estimated from the prompt's characters (``chars_per_token``):
the gateway has no tokenizer of the upstream's model. The routing facts:

| fact | from |
|---|---|
| tenant | the API key's tenant (open gateway: the ``x-tenant`` header) |
| user_id | body ``user``, else header ``x-user-id`` |
| user_tier | header ``x-user-tier`` |
| sla_class | header ``x-sla-class`` |
| model | body ``model`` |
| metadata | body ``metadata`` (string values; not sent upstream) |
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.gateway.routing.context import RequestContext
from mcp.gateway.routing.schema import SLA_CLASSES
from mcp.serving.errors import FieldError


@dataclass(frozen=True)
class ParsedRequest:
    body: dict[str, Any]
    stream: bool
    ctx: RequestContext
    prompt_head: str = ""  # the prompt's first characters (messages in order), for prefix-aware pools

    def upstream_body(self, model_id: str) -> bytes:
        """The body for the upstream: the chosen version as ``model``, gateway-only fields left out."""
        body = {key: value for key, value in self.body.items() if key != "metadata"}
        try:
            return json.dumps({**body, "model": model_id}).encode()
        except RecursionError:  # parsed near the limit, deeper once inside the handler
            raise FieldError("the request body is nested too deeply; send a flatter JSON object") from None


def parse_request(raw: bytes, headers: Mapping[str, str], tenant: str, chat: bool,
                  chars_per_token: float) -> ParsedRequest:
    body = _json_object(raw)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise FieldError("field stream: must be true or false", "stream")
    num_chars = _chat_chars(body) if chat else _prompt_chars(body)
    sla_class = headers.get("x-sla-class")
    if sla_class is not None and sla_class not in SLA_CLASSES:
        raise FieldError(f"header x-sla-class: {sla_class!r} is not one of {', '.join(SLA_CLASSES)}", "x-sla-class")
    ctx = RequestContext(
        tenant=tenant, user_id=_string(body, "user") or headers.get("x-user-id"),
        user_tier=headers.get("x-user-tier"), sla_class=sla_class,
        input_tokens=math.ceil(num_chars / chars_per_token), model=_string(body, "model") or None,
        headers=dict(headers), metadata=_metadata(body), request_id=headers.get("x-request-id") or uuid.uuid4().hex)
    return ParsedRequest(body, stream, ctx, _prompt_head(body, chat))


def _prompt_head(body: dict[str, Any], chat: bool, limit: int = 4096) -> str:
    """The prompt's first ``limit`` characters: each message's role and text in order (a chat's
    system prompt comes first, as the template renders it), or the (first) completion prompt."""
    if not chat:
        prompt = body["prompt"]
        return (prompt if isinstance(prompt, str) else prompt[0] if prompt else "")[:limit]
    head = ""
    for message in body["messages"]:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        head += f"{message.get('role')}\n{content}\n"
        if len(head) >= limit:
            break
    return head[:limit]


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FieldError(f"the request body is not valid JSON ({exc}); send a JSON object") from None
    except RecursionError:  # e.g. 1,000 nested arrays: the server answers 400 for it too
        raise FieldError("the request body is nested too deeply to parse; send a flatter JSON object") from None
    if not isinstance(body, dict):
        raise FieldError("the request body must be a JSON object")
    return body


def _string(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise FieldError(f"field {key}: must be a string", key)
    return value


def _chat_chars(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise FieldError("field messages: give a non-empty list of {role, content} objects", "messages")
    total = 0
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if content is None and message.get("role") == "assistant":  # a turn that only calls tools
            content = ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        if not isinstance(content, str):
            raise FieldError(f"field messages.{index}.content: must be a string or a list of text parts",
                             f"messages.{index}.content")
        total += len(content)
    return total


def _prompt_chars(body: dict[str, Any]) -> int:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return len(prompt)
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
        return sum(len(p) for p in prompt)
    raise FieldError("field prompt: give a string or a list of strings", "prompt")


def _metadata(body: dict[str, Any]) -> dict[str, str]:
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise FieldError("field metadata: must be an object of string values", "metadata")
    return metadata
