"""``CheckedHeaders``: the model headers a supervisor has parsed and checked, by the sha256 of
their JSON, so that a new version of a model it serves (a hot swap: the same file, or one with
the same header) costs neither the 3 MB frame nor the parse and checks again.

Each worker's ``start`` frame lists the digests held here (``WorkerSpec.known_headers``); a
worker whose header's JSON has one of them sends only the digest. That gives a worker no power
it lacked: it could always send any header JSON it liked, and every header here was parsed and
checked in this process, keyed by the digest this process took of the JSON it received.
"""

from __future__ import annotations

import collections
import hashlib
import threading
from typing import Any

from mcp.base.errors import WorkerUnavailableError
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.spec import ModelHeader
from mcp.modelfile.validate import check_header

_MAX_HEADERS = 8


class CheckedHeaders:
    """Parsed, checked headers and their tokenizers, the most recently used kept. Thread-safe."""

    def __init__(self) -> None:
        self._held: collections.OrderedDict[str, tuple[ModelHeader, Tokenizer]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def digests(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._held)

    def from_ready(self, ready: dict[str, Any], source: str) -> tuple[ModelHeader, Tokenizer]:
        """The header of a worker's ready frame (taken out of the frame: it is the size of the
        tokenizer), parsed and checked here unless held already."""
        text = ready.pop("header", None)
        if text is None:
            return self._held_as(str(ready.get("header_sha256")), source)
        header = ModelHeader.from_json(text, source=source)
        check_header(header, source)
        entry = (header, Tokenizer.from_spec(header.tokenizer))
        with self._lock:
            self._held[hashlib.sha256(text.encode()).hexdigest()] = entry
            while len(self._held) > _MAX_HEADERS:
                self._held.popitem(last=False)
        return entry

    def _held_as(self, digest: str, source: str) -> tuple[ModelHeader, Tokenizer]:
        with self._lock:
            entry = self._held.get(digest)
            if entry is not None:
                self._held.move_to_end(digest)
        if entry is None:  # a worker that names a header never sent: a protocol error
            raise WorkerUnavailableError(f"the worker loading {source} sent no header and named one this server "
                                         "does not hold; load the model again")
        return entry
