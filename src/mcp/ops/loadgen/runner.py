"""Send a workload to a target: each request in its own thread, at its arrival time.

The run is bounded: after the last arrival, requests still running get ``drain_timeout_s``
to finish; then they are closed (the target stops them) and recorded as ``timeout``.
Every time is ``perf_counter`` seconds from the run's start, taken by the runner itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mcp.base.errors import CapacityError
from mcp.ops.loadgen.record import ERROR, OK, REFUSED, TIMEOUT, RequestRecord
from mcp.ops.loadgen.target import Target, TargetStream
from mcp.ops.loadgen.workload import RequestSpec

CLOSE_GRACE_S = 5.0  # after closing the late streams, how long to wait for their threads


@dataclass(frozen=True)
class RunResult:
    records: tuple[RequestRecord, ...]
    duration_s: float  # start of the run -> the last request's end


@dataclass
class _Flight:
    """One request in flight; its worker thread writes it, the runner reads it at the end."""

    request: RequestSpec
    sent_s: float = 0.0
    chunk_times_s: list[float] = field(default_factory=list)
    stream: TargetStream | None = None
    record: RequestRecord | None = None


def run_workload(target: Target, requests: Sequence[RequestSpec], *, drain_timeout_s: float = 120.0) -> RunResult:
    """Run every request against ``target`` and return their records, in workload order."""
    origin = time.perf_counter()
    clock = lambda: time.perf_counter() - origin  # noqa: E731
    stop = threading.Event()
    flights = [_Flight(request) for request in requests]
    threads = []
    for flight in flights:
        delay = flight.request.arrival_s - clock()
        if delay > 0:
            time.sleep(delay)
        thread = threading.Thread(target=_send, args=(target, flight, clock, stop), daemon=True,
                                  name=f"loadgen-{flight.request.index}")
        thread.start()
        threads.append(thread)
    _join_all(threads, clock() + drain_timeout_s, clock)
    stop.set()
    for flight in flights:
        if flight.record is None and flight.stream is not None:
            flight.stream.close()
    _join_all(threads, clock() + CLOSE_GRACE_S, clock)
    records = tuple(flight.record or _late_record(flight, clock()) for flight in flights)
    return RunResult(records, max((r.end_s for r in records), default=0.0))


def _join_all(threads: list[threading.Thread], deadline: float, clock: Callable[[], float]) -> None:
    for thread in threads:
        thread.join(max(0.0, deadline - clock()))


def _send(target: Target, flight: _Flight, clock: Callable[[], float], stop: threading.Event) -> None:
    flight.sent_s = clock()
    try:
        flight.stream = target.open(flight.request)
        for _ in flight.stream:
            flight.chunk_times_s.append(clock())
            if stop.is_set():
                flight.stream.close()
                break
    except CapacityError as exc:
        flight.record = _record(flight, clock(), REFUSED, error=str(exc), retry_after_s=exc.retry_after_s)
        return
    except Exception as exc:  # noqa: BLE001 - any failure of one request is a result, not a crash of the run
        flight.record = _record(flight, clock(), TIMEOUT if stop.is_set() else ERROR,
                                error=f"{type(exc).__name__}: {exc}")
        return
    flight.record = _record(flight, clock(), TIMEOUT if stop.is_set() else OK)


def _record(flight: _Flight, end_s: float, status: str, **extra) -> RequestRecord:
    request, stream = flight.request, flight.stream
    chunks = tuple(flight.chunk_times_s)
    counted = stream.completion_tokens if stream is not None else None
    return RequestRecord(
        index=request.index, slo_class=request.slo_class, tenant=request.tenant,
        prompt_index=request.prompt_index, max_tokens=request.max_tokens, scheduled_s=request.arrival_s,
        sent_s=flight.sent_s, end_s=end_s, status=status, chunk_times_s=chunks,
        output_tokens=counted if counted is not None else len(chunks),
        prompt_tokens=stream.prompt_tokens if stream is not None else None,
        finish_reason=stream.finish_reason if stream is not None else None, **extra)


def _late_record(flight: _Flight, now_s: float) -> RequestRecord:
    """A request whose thread did not come back even after its stream was closed."""
    return _record(flight, now_s, TIMEOUT, error="did not finish within the drain time")
