"""Server-sent events as OpenAI-compatible servers stream them: ``data: ...`` lines, blank-line separated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def iter_sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data of each event; multi-line data joined by newlines, comments and other fields skipped."""
    data: list[str] = []
    for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
