"""The measurement log: a TCG-style event log whose replay gives PCR values.

Each event is ``(pcr, kind, name, digest)``; extending PCR ``i`` with an event sets
``PCR[i] = sha256(PCR[i] || digest)`` starting from 32 zero bytes, as a TPM's sha256 bank does.
Sinks (the TPM provider) see every event in log order, under the log's lock, so a real PCR
holds the same value as the replay.

The worker processes of a sandboxed server measure what they load and send the events here:
``MeasurementEvent.to_dict()`` / ``from_dict()`` cross a pipe as plain JSON.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from mcp.governance.attestation.errors import AttestationError

DEFAULT_PCR = 23  # the PC Client spec's application PCR: resettable at locality 0, used by no firmware
ZERO_PCR = "00" * 32
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
_KIND = re.compile(r"^[a-z][a-z0-9._-]{0,31}$")
Sink = Callable[["MeasurementEvent"], object]


@dataclass(frozen=True)
class MeasurementEvent:
    """One measurement: what (``kind``, ``name``) and its sha256 (``digest``, hex), into ``pcr``."""

    pcr: int
    kind: str  # code | config | policy | model
    name: str
    digest: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> MeasurementEvent:
        if not isinstance(data, dict):
            raise AttestationError(f"a measurement event must be an object, got {type(data).__name__}")
        try:
            event = cls(int(data["pcr"]), str(data["kind"]), str(data["name"]), str(data["digest"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise AttestationError(f"measurement event {data!r} lacks or mistypes a field ({exc}); "
                                   "each needs pcr, kind, name, digest") from None
        check_event(event)
        return event


def check_event(event: MeasurementEvent) -> None:
    if not 0 <= event.pcr <= 23:
        raise AttestationError(f"PCR index {event.pcr} is out of range; a TPM 2.0 has PCRs 0..23")
    if not _KIND.match(event.kind):
        raise AttestationError(f"measurement kind {event.kind!r} is not a short lowercase word (e.g. model)")
    if not _SHA256_HEX.match(event.digest):
        raise AttestationError(f"the digest of {event.kind} {event.name!r} is not a sha256 hex digest "
                               f"(64 lowercase hex digits): {event.digest[:80]!r}")


def extend_value(pcr_value: str, digest: str) -> str:
    """``sha256(old || digest)`` on hex strings: one PCR extend."""
    return hashlib.sha256(bytes.fromhex(pcr_value) + bytes.fromhex(digest)).hexdigest()


def replay(events: Iterable[MeasurementEvent]) -> dict[int, str]:
    """The PCR values the events give, starting from zeros: ``{pcr index: hex}``."""
    values: dict[int, str] = {}
    for event in events:
        values[event.pcr] = extend_value(values.get(event.pcr, ZERO_PCR), event.digest)
    return values


class MeasurementLog:
    """The server's measurements, in order. Thread-safe; append-only."""

    def __init__(self, pcr: int = DEFAULT_PCR) -> None:
        self.pcr = pcr
        self._lock = threading.Lock()
        self._events: list[MeasurementEvent] = []
        self._sinks: list[Sink] = []

    def add_sink(self, sink: Sink) -> None:
        """``sink(event)`` for every event from now on (call it before the first extend)."""
        with self._lock:
            self._sinks.append(sink)

    def extend(self, kind: str, name: str, digest: str) -> MeasurementEvent:
        """Record a measurement (sha256 hex ``digest`` of ``kind`` ``name``) and extend the PCR."""
        event = MeasurementEvent(self.pcr, kind, name, digest)
        check_event(event)
        with self._lock:
            for sink in self._sinks:
                sink(event)
            self._events.append(event)
        return event

    @contextmanager
    def frozen(self) -> Iterator[tuple[MeasurementEvent, ...]]:
        """The events so far, with every extend held off until the block ends."""
        with self._lock:
            yield tuple(self._events)

    def events(self) -> tuple[MeasurementEvent, ...]:
        with self._lock:
            return tuple(self._events)

    def latest(self, kind: str, name: str) -> MeasurementEvent | None:
        with self._lock:
            return next((e for e in reversed(self._events) if e.kind == kind and e.name == name), None)
