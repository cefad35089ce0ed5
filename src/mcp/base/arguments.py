"""Checks of an SDK call's arguments; each error names the argument and what it must be."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.base.errors import InvalidRequestError


def check_text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(f"{name} must be a string, got {type(value).__name__}")
    return check_unicode(value, name)


def check_unicode(text: str, name: str) -> str:
    """``text`` if it is valid Unicode. JSON's ``"\\ud800"`` decodes to a lone UTF-16 surrogate,
    which no tokenizer (nor UTF-8) can take: refused here, naming the field, not deep in a library."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError(
            f"{name} has a lone surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start}; "
            "text must be valid Unicode: pair each surrogate or leave it out") from None
    return text


# A model's name or version (docs/api.md): what a metric label, a log line and ``name:version`` hold safely.
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_SOURCE_CHARS = 4096  # Linux's PATH_MAX


def check_model_name(value: str, name: str) -> str:
    if not MODEL_NAME.fullmatch(value):
        raise InvalidRequestError(
            f"{name} is {value[:80]!r}; a model name or version is 1 to 64 characters of A-Z, a-z, 0-9, "
            "'.', '_' and '-', starting with a letter or digit")
    return value


def check_model_source(value: str, name: str) -> str:
    if len(value) > MAX_SOURCE_CHARS:
        raise InvalidRequestError(f"{name} has {len(value)} characters; a model source (a path or a catalog "
                                  f"name) has at most {MAX_SOURCE_CHARS}")
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise InvalidRequestError(f"{name} holds a control character (e.g. NUL); give a plain path or catalog name")
    return check_unicode(value, name)


def check_list(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise InvalidRequestError(f"{name} must be a list, got {type(values).__name__}")
    if not values:
        raise InvalidRequestError(f"{name} is empty: give at least one")
    return list(values)


def check_options(options: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"unknown argument(s) {', '.join(unknown)}; valid: {', '.join(sorted(allowed))}"
        )
