"""Checks of an SDK call's arguments; each error names the argument and what it must be."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp.base.errors import InvalidRequestError


def check_text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(f"{name} must be a string, got {type(value).__name__}")
    return value


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
