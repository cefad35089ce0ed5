"""Structured output: a request's ``ResponseFormat`` and the per-sequence grammar state that
masks its logits.

The grammar engine is llguidance (Rust, abi3 wheels, no Python dependencies; see
docs/api.md for why it and not xgrammar). A format is compiled and checked once, when the
request is built (``ResponseFormat.__post_init__``): a schema or grammar the engine cannot
compile is an ``InvalidRequestError`` naming the problem, before anything is queued. Each
constrained sequence then owns one ``GrammarState``: before its token is sampled the state
masks the tokens the grammar forbids to -inf (in place, on that sequence's row of the batch's
logits), after it the state consumes the token. Free sequences in the same batch are not
touched, and the state lives with the sequence, so preemption (recompute) and prefix caching
do not see it. No torch here: the lean (numpy) path uses it too.
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import llguidance
import numpy as np
from llguidance import gbnf_to_lark

from mcp.base.errors import EngineError, InvalidRequestError

FORMAT_TYPES = ("text", "json_object", "json_schema", "regex", "grammar")
MAX_GRAMMAR_CHARS = 1 << 20  # a schema, regex or grammar longer than 1 MiB of text is refused
# Compact but readable JSON (the separators json.dumps writes), no free whitespace: a small model
# given "any whitespace here" may spend its whole budget on newlines.
_JSON_OPTIONS: llguidance.JsonCompileOptions = {
    "item_separator": ", ", "key_separator": ": ", "whitespace_flexible": False}


@dataclass(frozen=True)
class ResponseFormat:
    """What the output must match: ``text`` (anything), ``json_object`` (any JSON object),
    ``json_schema`` (``schema``: the JSON Schema as JSON text), ``regex`` (``pattern``: a regular
    expression the whole output matches) or ``grammar`` (``pattern``: a Lark grammar, llguidance's
    dialect, with ``start`` as its start rule, or llama.cpp's GBNF with ``root``). ``strict``: a JSON Schema keyword the engine does
    not implement is an error (else it is ignored). Checked and compiled on construction."""

    type: str = "text"
    schema: str | None = None
    pattern: str | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        if self.type not in FORMAT_TYPES:
            raise InvalidRequestError(f"response_format type {self.type!r} is unknown; use one of "
                                      f"{', '.join(FORMAT_TYPES)}")
        if not isinstance(self.strict, bool):
            raise InvalidRequestError(f"response_format strict must be true or false, got {self.strict!r}")
        _check_sources(self)
        compiled_grammar(self)  # raises InvalidRequestError naming the problem

    @property
    def constrains(self) -> bool:
        """False for ``text``: nothing to mask."""
        return self.type != "text"

    @classmethod
    def json_schema(cls, schema: Mapping[str, Any] | bool, strict: bool = False) -> ResponseFormat:
        """A ``json_schema`` format from a schema given as Python data."""
        return cls("json_schema", schema=_schema_text(schema), strict=strict)


def response_format_of(value: Any) -> ResponseFormat | None:
    """A ``ResponseFormat`` from what a caller gives: one already built, ``None``, a pydantic
    model class (its JSON schema, strict), or OpenAI's ``response_format`` object:
    ``{"type": "text"}``, ``{"type": "json_object"}``, ``{"type": "json_schema", "json_schema":
    {"name": ..., "schema": {...}, "strict": true}}``, and ours, ``{"type": "regex", "regex": ...}``
    and ``{"type": "grammar", "grammar": ...}`` (Lark)."""
    if value is None or isinstance(value, ResponseFormat):
        return value
    if isinstance(value, type) and hasattr(value, "model_json_schema"):
        return ResponseFormat.json_schema(value.model_json_schema(), strict=True)
    if not isinstance(value, Mapping):
        raise InvalidRequestError(f"response_format must be an object with a type, got {type(value).__name__}")
    kind = value.get("type")
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, Mapping) or "schema" not in spec:
            raise InvalidRequestError("response_format json_schema needs json_schema.schema, the JSON Schema")
        return ResponseFormat.json_schema(spec["schema"], strict=bool(spec.get("strict") or False))
    if kind in ("regex", "grammar"):
        return ResponseFormat(kind, pattern=value.get(kind))
    return ResponseFormat(kind if isinstance(kind, str) else repr(kind))


def _check_sources(fmt: ResponseFormat) -> None:
    needs = {"json_schema": "schema", "regex": "pattern", "grammar": "pattern"}.get(fmt.type)
    for name in ("schema", "pattern"):
        value = getattr(fmt, name)
        if name == needs:
            if not isinstance(value, str) or not value:
                raise InvalidRequestError(f"response_format {fmt.type} needs its {name} as non-empty text")
            if len(value) > MAX_GRAMMAR_CHARS:
                raise InvalidRequestError(f"response_format {name} has {len(value)} characters; at most "
                                          f"{MAX_GRAMMAR_CHARS} are taken")
        elif value is not None:
            raise InvalidRequestError(f"response_format {fmt.type} takes no {name}")


def _schema_text(schema: Any) -> str:
    if not isinstance(schema, (Mapping, bool)):
        raise InvalidRequestError(f"a JSON schema is an object (or true/false), got {type(schema).__name__}")
    try:
        return json.dumps(schema, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(f"the JSON schema is not JSON data ({exc})") from None


@functools.lru_cache(maxsize=64)
def compiled_grammar(fmt: ResponseFormat) -> str | None:
    """llguidance's grammar for ``fmt`` (None for ``text``), checked; cached, since the same
    schema comes with every request of an application."""
    if fmt.type == "text":
        return None
    try:
        grammar = _grammar_text(fmt)
    except (ValueError, TypeError) as exc:
        raise InvalidRequestError(f"response_format {fmt.type} cannot be compiled: {exc}") from None
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        raise InvalidRequestError(f"response_format {fmt.type} cannot be compiled: {messages[0]}")
    return grammar


def _grammar_text(fmt: ResponseFormat) -> str:
    if fmt.type in ("json_object", "json_schema"):
        schema = '{"type": "object"}' if fmt.type == "json_object" else fmt.schema
        if isinstance(json.loads(schema), dict) and not fmt.strict:
            overrides = {**_JSON_OPTIONS, "lenient": True}
        else:
            overrides = _JSON_OPTIONS
        return llguidance.LLMatcher.grammar_from_json_schema(schema, overrides=overrides)
    if fmt.type == "regex":
        return llguidance.LLMatcher.grammar_from_regex(fmt.pattern or "")
    text = fmt.pattern or ""
    if "::=" in text and not gbnf_to_lark.is_lark_syntax(text):  # llama.cpp's GBNF, start rule `root`
        try:
            text = gbnf_to_lark.gbnf_to_lark(text)
        except Exception as exc:  # noqa: BLE001 - the converter raises plain Exception on a bad grammar
            raise ValueError(f"GBNF: {exc}") from None
    return llguidance.LLMatcher.grammar_from_lark(text)


def json_schemas_format(schemas: Sequence[Mapping[str, Any]], prefix: str = "", suffix: str = "",
                        strict: bool = True) -> ResponseFormat:
    """A ``grammar`` format whose output is ``prefix``, one JSON value valid against one of
    ``schemas``, then ``suffix`` (literal text, e.g. a template's ``<tool_call>`` tags).

    For tool calling: ``tool_choice: required`` gives every tool's call schema, a named
    function just its own. Raises InvalidRequestError when a schema cannot be compiled.
    """
    if not schemas:
        raise InvalidRequestError("json_schemas_format needs at least one schema")
    texts = [_schema_text(schema) for schema in schemas]
    options = json.dumps({**_JSON_OPTIONS, "lenient": not strict})
    rules = [f"value_{i}: %json {{ \"x-guidance\": {options}, \"allOf\": [{text}] }}"
             for i, text in enumerate(texts)]
    body = " | ".join(f"value_{i}" for i in range(len(texts)))
    start = " ".join(part for part in (json.dumps(prefix) if prefix else "", f"({body})",
                                       json.dumps(suffix) if suffix else "") if part)
    return ResponseFormat("grammar", pattern="\n".join([f"start: {start}", *rules]))


class GrammarState:
    """One sequence's place in its grammar: masks its logits row, consumes its tokens."""

    def __init__(self, fmt: ResponseFormat, tokenizer: Any) -> None:
        grammar = compiled_grammar(fmt)
        self._matcher = llguidance.LLMatcher(_guidance_tokenizer(tokenizer), grammar, log_level=0)
        if self._matcher.is_error():  # checked on construction of fmt; a tokenizer-specific failure
            raise InvalidRequestError(f"response_format {fmt.type} cannot be used with this model's "
                                      f"tokenizer: {self._matcher.get_error()}")

    def mask(self, logits: Any) -> Any:
        """``logits`` with the tokens the grammar forbids next at -inf; ``logits`` is one
        position's [vocab] row: a numpy array (masked in place) or a torch tensor (masked into a
        new one: the step's logits are inference-mode tensors)."""
        bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little").view(bool)  # [words * 32]
        width = logits.shape[-1]
        if allowed.size < width:  # logit rows padded past the tokenizer's vocabulary
            allowed = np.concatenate([allowed, np.zeros(width - allowed.size, dtype=bool)])
        allowed = allowed[:width]
        if isinstance(logits, np.ndarray):
            np.putmask(logits, ~allowed, -np.inf)
            return logits
        return _masked_tensor(logits, allowed)

    def consume(self, token_id: int) -> None:
        """Advance past the sampled token (one the mask allowed)."""
        if not self._matcher.consume_token(token_id):
            raise EngineError(f"the grammar refused token {token_id} it had allowed: "
                              f"{self._matcher.get_error()}")

    @property
    def done(self) -> bool:
        """True once the grammar can take nothing more: the output is complete."""
        return self._matcher.is_stopped()


def _masked_tensor(logits: Any, allowed: np.ndarray) -> Any:
    import torch  # only a torch tensor gets here, so torch is installed

    if logits.device.type == "cpu" and logits.dtype == torch.float32:
        # numpy's select: ~30 us over a 49k vocabulary, where torch's masked_fill takes 0.4 ms on
        # one thread and ms when its threads contend with the step's (torch 2.13)
        return torch.from_numpy(np.where(allowed, logits.numpy(), np.float32(-np.inf)))
    return logits.masked_fill(torch.from_numpy(~allowed).to(logits.device, non_blocking=True), float("-inf"))


_TOKENIZERS: weakref.WeakKeyDictionary[Any, llguidance.LLTokenizer] = weakref.WeakKeyDictionary()
_TOKENIZERS_LOCK = threading.Lock()


def _guidance_tokenizer(tokenizer: Any) -> llguidance.LLTokenizer:
    """llguidance's view of a model's tokenizer (about 0.5 s to build: once per tokenizer)."""
    with _TOKENIZERS_LOCK:
        built = _TOKENIZERS.get(tokenizer)
        if built is None:
            built = llguidance.LLTokenizer(tokenizer.serialized(), n_vocab=tokenizer.vocab_size,
                                           eos_token=list(tokenizer.eos_token_ids) or None)
            _TOKENIZERS[tokenizer] = built
        return built
