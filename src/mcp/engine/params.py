"""What a request asks of sampling (``SamplingParams``, checked on construction) and what a
sampler hands back (``SampledToken``). No torch here: the torch sampler (``sampler``) and
the torch-free one (``lean.sampling``) share these, so a request is checked the same way
whichever runs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from mcp.base.errors import InvalidRequestError
from mcp.engine.grammar import ResponseFormat, response_format_of

MAX_STOP_STRINGS = 16
MAX_LOGPROBS = 20
MAX_COUNT = 2**31 - 1  # the largest max_tokens, top_k or token id: every layer (and the worker wire) carries it
SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.Generator.manual_seed accepts


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens for one request; every field is validated on construction."""

    max_tokens: int = 256
    temperature: float = 1.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # in (0, 1]
    min_p: float = 0.0  # in [0, 1)
    repetition_penalty: float = 1.0  # > 0; over prompt + generated ids
    presence_penalty: float = 0.0  # [-2, 2], over generated ids
    frequency_penalty: float = 0.0  # [-2, 2], over generated ids
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    logprobs: int | None = None  # None = off; n: chosen token's logprob plus the top n
    response_format: ResponseFormat | None = None  # None = free text; else a grammar masks each step
    logit_bias: tuple[tuple[int, float], ...] = ()  # (token id, added to its logit in [-100, 100]), OpenAI's

    def __post_init__(self) -> None:
        _check_int("max_tokens", self.max_tokens, 1, MAX_COUNT, f"an integer in [1, {MAX_COUNT}]")
        _check_int("top_k", self.top_k, 0, MAX_COUNT, f"an integer in [0, {MAX_COUNT}] (0 = off)")
        self._check_floats()
        if self.seed is not None:
            _check_int("seed", self.seed, *SEED_RANGE, "an integer in [-2**63, 2**64 - 1] or None")
        if self.logprobs is not None:
            allowed = f"an integer in [0, {MAX_LOGPROBS}] or None"
            _check_int("logprobs", self.logprobs, 0, MAX_LOGPROBS, allowed)
        _check_stop(self.stop)
        _check_stop_token_ids(self.stop_token_ids)
        _check_logit_bias(self.logit_bias)
        if not isinstance(self.ignore_eos, bool):
            raise InvalidRequestError(f"ignore_eos must be true or false, got {self.ignore_eos!r}")
        if self.response_format is not None and not isinstance(self.response_format, ResponseFormat):
            raise InvalidRequestError(f"response_format must be a ResponseFormat, got "
                                      f"{type(self.response_format).__name__}")

    def _check_floats(self) -> None:
        checks = (  # name, allowed range as text, test
            ("temperature", ">= 0", lambda v: v >= 0),
            ("top_p", "in (0, 1]", lambda v: 0 < v <= 1),
            ("min_p", "in [0, 1)", lambda v: 0 <= v < 1),
            ("repetition_penalty", "> 0", lambda v: v > 0),
            ("presence_penalty", "in [-2, 2]", lambda v: -2 <= v <= 2),
            ("frequency_penalty", "in [-2, 2]", lambda v: -2 <= v <= 2),
        )
        for name, allowed, test in checks:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidRequestError(f"{name} must be a number {allowed}, got {value!r}")
            if not math.isfinite(value) or not test(value):
                raise InvalidRequestError(f"{name} must be {allowed}, got {value!r}")
            object.__setattr__(self, name, float(value))

    @classmethod
    def from_user(cls, **kwargs: Any) -> SamplingParams:
        """Build from loosely typed request fields: ``None`` means "default", ``stop`` may be
        one string or a list, ``stop_token_ids`` a list, ``response_format`` what
        ``grammar.response_format_of`` takes; unknown names are rejected."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise InvalidRequestError(
                f"unknown sampling parameter {unknown[0]!r}; known: {', '.join(sorted(known))}"
            )
        values = {k: v for k, v in kwargs.items() if v is not None}
        if isinstance(values.get("stop"), str):
            values["stop"] = (values["stop"],)
        for name in ("stop", "stop_token_ids"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        if "response_format" in values:
            values["response_format"] = response_format_of(values["response_format"])
        if isinstance(values.get("logit_bias"), dict):  # OpenAI's {token id: bias}
            values["logit_bias"] = tuple(sorted(values["logit_bias"].items()))
        if isinstance(values.get("logit_bias"), list):  # the worker wire's [[id, bias], ...]
            values["logit_bias"] = tuple(tuple(pair) for pair in values["logit_bias"])
        return cls(**values)


def _check_int(name: str, value: Any, low: int | None, high: int | None, allowed: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequestError(f"{name} must be {allowed}, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise InvalidRequestError(f"{name} must be {allowed}, got {value!r}")


def _check_stop(stop: Any) -> None:
    if not isinstance(stop, tuple):
        raise InvalidRequestError(f"stop must be a tuple of strings, got {type(stop).__name__}")
    if len(stop) > MAX_STOP_STRINGS:
        raise InvalidRequestError(f"stop may hold at most {MAX_STOP_STRINGS} strings, got {len(stop)}")
    for i, text in enumerate(stop):
        if not isinstance(text, str) or not text:
            raise InvalidRequestError(f"stop[{i}] must be a non-empty string, got {text!r}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequestError(f"stop[{i}] is not valid UTF-8: {text!r}") from None


def _check_stop_token_ids(ids: Any) -> None:
    if not isinstance(ids, tuple):
        raise InvalidRequestError(f"stop_token_ids must be a tuple of token ids, got {type(ids).__name__}")
    for i, token_id in enumerate(ids):
        _check_int(f"stop_token_ids[{i}]", token_id, 0, MAX_COUNT, f"a token id in [0, {MAX_COUNT}]")


MAX_LOGIT_BIAS = 300  # token ids a request may bias (OpenAI's limit)


def _check_logit_bias(bias: Any) -> None:
    if not isinstance(bias, tuple) or len(bias) > MAX_LOGIT_BIAS:
        raise InvalidRequestError(f"logit_bias must map at most {MAX_LOGIT_BIAS} token ids to biases, got {bias!r}")
    for pair in bias:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidRequestError(f"logit_bias entries are (token id, bias) pairs, got {pair!r}")
        token_id, value = pair
        _check_int("a logit_bias token id", token_id, 0, MAX_COUNT, f"a token id in [0, {MAX_COUNT}]")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -100 <= value <= 100:
            raise InvalidRequestError(f"logit_bias of token {token_id} must be a number in [-100, 100], got {value!r}")


@dataclass(frozen=True)
class SampledToken:
    """One chosen token and, when asked for, its log-probability and the top alternatives."""

    token_id: int
    logprob: float | None  # under the raw model distribution
    top_logprobs: tuple[tuple[int, float], ...]  # (id, logprob), most probable first
