"""Scale the offered load to the machine: measure one request alone first.

``calibrate`` sends one warm-up request and then ``num_runs`` requests one at a time (the
same prompt and budget as the workload), and reports the TTFT, the decode speed of a single
sequence, and the rate a server answering one request at a time would sustain,
``1 / E2E``. ``mcp2026 bench serve --calibrate`` reads ``--rate``/``--sweep`` as multiples of
that rate, so ``--rate 2`` offers twice what a batch-1 server could serve, on any machine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from statistics import median

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.record import OK
from mcp.ops.loadgen.runner import run_workload
from mcp.ops.loadgen.target import Target
from mcp.ops.loadgen.workload import RequestSpec

CALIBRATION_PROMPT = "Explain quantum entanglement in simple terms."


@dataclass(frozen=True)
class Calibration:
    max_tokens: int
    ttft_s: float
    e2e_s: float
    decode_tokens_per_s: float
    single_stream_rate: float  # requests/s one at a time: 1 / e2e

    def to_dict(self) -> dict:
        return asdict(self)


def calibrate(target: Target, max_tokens: int, slo_class: str, num_runs: int = 2,
              timeout_s: float = 300.0) -> Calibration:
    samples = [_one(target, max_tokens, slo_class, timeout_s) for _ in range(num_runs + 1)][1:]
    ttft = median(s[0] for s in samples)
    e2e = median(s[1] for s in samples)
    speed = median(s[2] for s in samples)
    return Calibration(max_tokens, ttft, e2e, speed, 1.0 / e2e)


def _one(target: Target, max_tokens: int, slo_class: str, timeout_s: float) -> tuple[float, float, float]:
    request = RequestSpec(0, 0.0, CALIBRATION_PROMPT, 0, max_tokens, slo_class, "calibration")
    record = run_workload(target, [request], drain_timeout_s=timeout_s).records[0]
    if record.status != OK:
        raise InvalidRequestError(f"--calibrate: the calibration request ended {record.status}: {record.error}")
    chunks = record.chunk_times_s
    if len(chunks) < 2:
        raise InvalidRequestError(
            f"--calibrate: the calibration request streamed {len(chunks)} delta(s); it needs two or more "
            "(raise --max-tokens, or keep EOS ignored)")
    decode = (record.output_tokens - 1) / (chunks[-1] - chunks[0])
    return chunks[0] - record.sent_s, record.end_s - record.sent_s, decode
