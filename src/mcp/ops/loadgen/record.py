"""What the load generator records of one request: its times and counts, nothing derived.

Times are seconds from the start of the run (one ``perf_counter`` origin for all requests).
``chunk_times_s`` holds the arrival time of every non-empty text delta; a delta may carry
more than one token (a server's SSE chunk, a character held back by the detokenizer).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

OK = "ok"  # the stream ran to its end
REFUSED = "refused"  # admission control said no (CapacityError, HTTP 429)
ERROR = "error"  # any other failure
TIMEOUT = "timeout"  # still running when the run's drain time ran out; cancelled
STATUSES = (OK, REFUSED, ERROR, TIMEOUT)


@dataclass(frozen=True)
class RequestRecord:
    index: int
    slo_class: str
    tenant: str
    prompt_index: int
    max_tokens: int
    scheduled_s: float  # arrival time in the workload
    sent_s: float  # when the request was actually sent (late if the client lagged)
    end_s: float  # the stream's end, the refusal or the error
    status: str
    chunk_times_s: tuple[float, ...] = ()
    output_tokens: int = 0  # from the usage the target reports, else the number of chunks
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    retry_after_s: float | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["chunk_times_s"] = list(self.chunk_times_s)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> RequestRecord:
        return cls(**{**data, "chunk_times_s": tuple(data["chunk_times_s"])})
