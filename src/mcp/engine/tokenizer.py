"""The runtime tokenizer: encode, decode, stream-decode and chat-format text.

Encoding and decoding run in Hugging Face ``tokenizers`` (Rust). Chat templates are Jinja,
rendered the way transformers renders them (a sandbox with ``trim_blocks`` and
``lstrip_blocks``, ``loopcontrols``, ``raise_exception``, ``strftime_now``, and a ``tojson``
that keeps non-ASCII text), so a prompt formats to the same string here and there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import jinja2
import tokenizers
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import processors

from mcp.base.arguments import check_unicode
from mcp.base.errors import InvalidRequestError, ModelFormatError
from mcp.engine.heap import release_free_memory
from mcp.modelfile.spec import TokenizerSpec

_REPLACEMENT = "\ufffd"  # what a decoder writes for bytes that are not (yet) a whole character


class Tokenizer:
    """A model's tokenizer, built once from its ``TokenizerSpec``."""

    def __init__(self, backend: tokenizers.Tokenizer, spec: TokenizerSpec) -> None:
        self._backend = backend
        # the template's two token strings; not the spec, whose serialized JSON (3 MiB of str
        # for SmolLM2) is not needed once the backend is built
        self._bos_token, self._eos_token = spec.bos_token or "", spec.eos_token or ""
        self._template = _compile_chat_template(spec.chat_template) if spec.chat_template else None
        self.vocab_size: int = backend.get_vocab_size(with_added_tokens=True)
        self.bos_token_id: int | None = spec.bos_token_id
        self.eos_token_ids: tuple[int, ...] = spec.eos_token_ids

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> Tokenizer:
        """Load the serialized tokenizer; BOS/EOS are added as the spec's flags say.

        A Tokenizer never changes once built, so loads of the same model (a hot swap, a
        reload) share one: parsing the vocabulary is most of a warm model load.
        """
        return _tokenizer_for(spec)

    @classmethod
    def _build(cls, spec: TokenizerSpec) -> Tokenizer:
        try:
            backend = tokenizers.Tokenizer.from_str(spec.tokenizer_json)
        except Exception as exc:  # tokenizers raises plain Exception on a bad serialization
            raise ModelFormatError(
                f"the model's tokenizer cannot be loaded ({exc}); recompile the model"
            ) from None
        backend.no_truncation()
        backend.no_padding()
        backend.post_processor = _special_tokens_processor(spec)
        return cls(backend, spec)


    def serialized(self) -> str:
        """The backend tokenizer as Hugging Face JSON (what a grammar engine builds its own from)."""
        return self._backend.to_str()

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text``; special-token strings in it become their special tokens."""
        if not isinstance(text, str):
            raise InvalidRequestError(f"text to encode must be a string, got {type(text).__name__}")
        return self._backend.encode(check_unicode(text, "text"), add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` (ids outside the vocabulary decode to nothing)."""
        try:
            return self._backend.decode(list(ids), skip_special_tokens=skip_special_tokens)
        except (OverflowError, TypeError) as exc:
            raise InvalidRequestError(f"token ids must be non-negative integers ({exc})") from None

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = True,
        **template_kwargs: Any,
    ) -> str:
        """Format a conversation into the prompt text the model was trained on."""
        if self._template is None:
            raise InvalidRequestError(
                "this model has no chat template, so chat messages cannot be formatted; "
                "send a raw prompt (completion request) instead"
            )
        variables = {
            "tools": None,
            "documents": None,
            "bos_token": self._bos_token,
            "eos_token": self._eos_token,
            **template_kwargs,
        }
        conversation = _checked_messages(messages)
        try:
            return self._template.render(
                messages=conversation, add_generation_prompt=add_generation_prompt, **variables
            )
        except InvalidRequestError:
            raise
        except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise InvalidRequestError(f"the chat template could not format these messages: {exc}") from None

    def incremental_decoder(self, skip_special_tokens: bool = True) -> IncrementalDecoder:
        """A decoder that turns a stream of generated ids into text as it completes."""
        return IncrementalDecoder(self, skip_special_tokens)


class IncrementalDecoder:
    """Streams text token by token without ever cutting a character in half.

    It decodes a short window: the tokens already emitted since the last safe point (as
    context, so leading-space and byte-fallback rules see what they would in a full decode)
    and the tokens not yet emitted. New text is released only when it does not end in a
    replacement character, i.e. when its last character's bytes are all there.
    """

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool) -> None:
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._ids: list[int] = []
        self._prefix_offset = 0  # window start: the tokens emitted just before read_offset
        self._read_offset = 0  # tokens before this have been emitted

    def push(self, token_id: int) -> str:
        """Add one token; return the text it completes ('' while a character is unfinished)."""
        self._ids.append(token_id)
        prefix_text, window_text = self._decode_window()
        if len(window_text) <= len(prefix_text) or window_text.endswith(_REPLACEMENT):
            return ""
        self._prefix_offset, self._read_offset = self._read_offset, len(self._ids)
        return window_text[len(prefix_text) :]

    def flush(self) -> str:
        """The text still held back (an unfinished character decodes as U+FFFD)."""
        prefix_text, window_text = self._decode_window()
        self._prefix_offset = self._read_offset = len(self._ids)
        return window_text[len(prefix_text) :]

    def _decode_window(self) -> tuple[str, str]:
        decode = self._tokenizer.decode
        start, read = self._prefix_offset, self._read_offset
        prefix_text = decode(self._ids[start:read], skip_special_tokens=self._skip)
        return prefix_text, decode(self._ids[start:], skip_special_tokens=self._skip)


_BUILT: dict[TokenizerSpec, Tokenizer] = {}
_BUILT_LOCK = threading.Lock()
_BUILT_MAX = 8  # tokenizers kept for later loads of the same model


def _tokenizer_for(spec: TokenizerSpec) -> Tokenizer:
    """The shared Tokenizer of ``spec``, keyed by the spec with its JSON replaced by the JSON's
    digest, so that the cache does not keep the JSON itself alive."""
    key = dataclasses.replace(spec, tokenizer_json=hashlib.sha256(spec.tokenizer_json.encode()).hexdigest())
    with _BUILT_LOCK:
        tokenizer = _BUILT.pop(key, None)
        if tokenizer is None:
            tokenizer = Tokenizer._build(spec)
            release_free_memory()  # parsing the JSON freed over half of what it took (heap.py)
        _BUILT[key] = tokenizer  # the most recently used last
        while len(_BUILT) > _BUILT_MAX:
            del _BUILT[next(iter(_BUILT))]
    return tokenizer


def _special_tokens_processor(spec: TokenizerSpec) -> processors.TemplateProcessing:
    """``[BOS] $A [EOS]`` with each special token present only if the spec asks for it."""
    special: dict[str, int] = {}
    if spec.add_bos_token and spec.bos_token is not None and spec.bos_token_id is not None:
        special[spec.bos_token] = spec.bos_token_id
    front = list(special)
    back = []
    if spec.add_eos_token and spec.eos_token is not None and spec.eos_token_ids:
        special.setdefault(spec.eos_token, spec.eos_token_ids[0])
        back = [spec.eos_token]
    single = [*front, "$A:0", *back]
    pair = [*single, *front, "$B:1", *back]
    return processors.TemplateProcessing(single=single, pair=pair, special_tokens=list(special.items()))


def _checked_messages(messages: Any) -> list[dict[str, Any]]:
    """Plain-dict copies of the messages, after checking each has string role and content."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidRequestError(
            "messages must be a list of {'role': ..., 'content': ...} objects, "
            f"got {type(messages).__name__}"
        )
    if not messages:
        raise InvalidRequestError("messages is empty; send at least one message")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidRequestError(
                f"messages[{index}] must be an object with 'role' and 'content', got {type(message).__name__}"
            )
        for key in ("role", "content"):
            if key not in message:
                raise InvalidRequestError(
                    f"messages[{index}] has no '{key}'; every message needs a string 'role' and 'content'"
                )
            if not isinstance(message[key], str):
                raise InvalidRequestError(
                    f"messages[{index}].{key} must be a string, got {type(message[key]).__name__}"
                )
            check_unicode(message[key], f"messages[{index}].{key}")
    return [dict(message) for message in messages]


class _GenerationTag(Extension):
    """``{% generation %}...{% endgeneration %}`` marks assistant text for training masks in
    transformers; rendering a prompt only needs its body."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Any) -> str:
        return caller()


def _raise_exception(message: str) -> None:
    raise InvalidRequestError(f"the chat template rejected these messages: {message}")


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' ``tojson``: keeps non-ASCII text and HTML characters as they are."""
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _compile_chat_template(source: str) -> jinja2.Template:
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, "jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    try:
        return environment.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ModelFormatError(
            f"the model's chat template is not valid Jinja (line {exc.lineno}: {exc.message})"
        ) from None
