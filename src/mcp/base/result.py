"""What an inference returns."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.base.timing import RequestTimings


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0  # prompt tokens the prefix cache supplied (not computed again)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Timings:
    """Seconds from submission: to the first token, mean per output token after it, in all; and
    the part of the TTFT spent waiting in the scheduler's queue (None: it never left it)."""

    ttft_s: float
    tpot_s: float
    total_s: float
    queue_s: float | None = None

    @classmethod
    def from_request(cls, timings: RequestTimings, num_tokens: int) -> Timings:
        """From the engine's clock readings of a request that generated ``num_tokens``."""
        total = timings.total_s or 0.0
        ttft = timings.ttft_s if timings.ttft_s is not None else total  # ended before a first token
        tpot = (total - ttft) / (num_tokens - 1) if num_tokens > 1 else 0.0
        return cls(ttft, tpot, total, timings.queue_s)


@dataclass(frozen=True)
class TokenLogprob:
    token_id: int
    token: str
    logprob: float
    top_logprobs: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class InferResult:
    """The outcome of ``Model.infer`` / ``Model.chat``."""

    text: str
    token_ids: tuple[int, ...]
    finish_reason: str  # "stop" | "length" | "cancelled" | "deadline"
    usage: Usage
    timings: Timings
    backend: str
    precision: str
    model: str
    logprobs: tuple[TokenLogprob, ...] | None = None


@dataclass(frozen=True)
class EmbedResult:
    """The outcome of ``Model.embed``: one vector per input, in order."""

    embeddings: tuple[tuple[float, ...], ...]
    num_tokens: tuple[int, ...]  # tokens of each input, special ones included
    model: str
    total_s: float

    @property
    def usage(self) -> Usage:
        return Usage(sum(self.num_tokens), 0)
