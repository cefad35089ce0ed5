"""``mcp.runtime.embedded``: what libmcp calls. Its error mapping must agree with the C header's
``mcp_status`` enum (include/mcp/mcp.h), class by class."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp.base import errors
from mcp.runtime import embedded

HEADER = Path(__file__).resolve().parents[2] / "include" / "mcp" / "mcp.h"


def header_codes() -> dict[str, tuple[int, str]]:
    """``{MCP_ERR_NAME: (value, the comment's first word)}`` from the enum."""
    pattern = re.compile(r"^\s*(MCP_\w+) = (\d+),?\s*/\* ?(\S+)", re.MULTILINE)
    return {name: (int(value), first) for name, value, first in pattern.findall(HEADER.read_text())}


def test_every_error_class_maps_to_the_header_code_named_for_it() -> None:
    codes = header_codes()
    by_value = {value: first.rstrip(":") for value, first in codes.values()}
    for cls, code in embedded.STATUS_CODES:
        expected = "ArgumentError" if cls is embedded.ArgumentError else cls.__name__
        assert by_value[code] == expected, (cls, code, by_value[code])
    error_classes = {cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, errors.MCPError)}
    assert error_classes <= {cls for cls, _ in embedded.STATUS_CODES}


@pytest.mark.parametrize("error, code", [
    (errors.ContextLengthError("too long"), 7),
    (errors.InvalidRequestError("bad"), 6),
    (errors.UnsupportedModelError("arch"), 5),
    (errors.ModelFormatError("corrupt"), 4),
    (errors.CapacityError("full", retry_after_s=1.0), 9),
    (errors.PolicyDenied("no"), 10),
    (errors.RequestCancelled("gone"), 13),
    (embedded.ArgumentError("NULL"), 17),
])
def test_describe_error_gives_the_most_specific_code(error: Exception, code: int) -> None:
    assert embedded.describe_error(error) == (code, str(error))


def test_a_non_mcp_error_is_internal_and_names_its_type() -> None:
    assert embedded.describe_error(KeyError("x")) == (16, "internal error (KeyError): 'x'")


def test_undecodable_text_is_an_invalid_request() -> None:
    code, message = embedded.describe_error(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"))
    assert code == 6 and "not valid UTF-8" in message


def test_a_cancel_token_cancels_streams_attached_before_and_after() -> None:
    class Recorder:
        cancelled = 0

        def cancel(self) -> None:
            self.cancelled += 1

    token, before, after = embedded.CancelToken(), Recorder(), Recorder()
    token.attach(before)
    token.cancel()
    token.attach(after)
    assert (before.cancelled, after.cancelled, token.cancelled) == (1, 1, True)
