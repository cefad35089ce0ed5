"""The typed objects that cross the worker channel, as JSON-able data and back.

Requests go down (sampling and scheduling options, the loop config); token steps, outcomes,
loop stats and errors come up. An error from the worker becomes one of a fixed set of
``MCPError`` classes by name: the supervisor never builds a class the worker names freely.
"""

from __future__ import annotations

import reprlib
from dataclasses import asdict, fields
from typing import Any

import orjson

from mcp.base import errors
from mcp.engine.grammar import ResponseFormat
from mcp.engine.handle import RequestOptions, RequestOutcome
from mcp.engine.hooks import RequestTimings
from mcp.engine.live import LoopStats
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.scheduler.slo import SLOClass, SLOTarget
from mcp.engine.sequence import StepOutput

# The errors a worker may report, by class name; anything else arrives as an EngineError.
_ERRORS: dict[str, type[errors.MCPError]] = {kind.__name__: kind for kind in (
    errors.InvalidRequestError, errors.ContextLengthError, errors.CapacityError, errors.EngineError,
    errors.RequestCancelled, errors.ConfigError, errors.ModelFormatError, errors.UnsupportedModelError,
    errors.ModelNotFoundError)}


def encode_error(error: BaseException) -> dict[str, Any]:
    kind = type(error).__name__ if isinstance(error, errors.MCPError) else "EngineError"
    message = str(error) if isinstance(error, errors.MCPError) else f"the worker failed: {error!r}"
    return {"type": kind, "message": message, "retry_after_s": getattr(error, "retry_after_s", None)}


def decode_error(data: dict[str, Any]) -> errors.MCPError:
    kind = _ERRORS.get(str(data.get("type")), errors.EngineError)
    message = str(data.get("message", "the worker failed"))
    if kind is errors.CapacityError:
        retry = data.get("retry_after_s")
        return errors.CapacityError(message, float(retry) if isinstance(retry, (int, float)) else None)
    return kind(message)


def encode_step(step: StepOutput) -> list[Any]:
    return [step.token_id, step.text, step.logprob, step.top_logprobs, step.finish_reason]


def decode_step(data: list[Any]) -> StepOutput:
    token_id, text, logprob, top, finish = data
    return StepOutput(int(token_id), str(text), logprob, tuple((int(t), float(p)) for t, p in top), finish)


def encode_outcome(outcome: RequestOutcome) -> dict[str, Any]:
    data = {f.name: getattr(outcome, f.name) for f in fields(outcome) if f.name not in ("timings", "error")}
    data["timings"] = asdict(outcome.timings)
    data["error"] = None if outcome.error is None else encode_error(outcome.error)
    return data


def decode_outcome(data: dict[str, Any], request_id: str) -> RequestOutcome:
    error = data.get("error")
    return RequestOutcome(
        request_id, str(data["finish_reason"]), int(data["num_prompt_tokens"]), int(data["num_output_tokens"]),
        int(data["num_cached_tokens"]), int(data["num_preemptions"]), RequestTimings(**data["timings"]),
        str(data.get("tail_text", "")), None if error is None else decode_error(error))


def encode_request(params: SamplingParams, options: RequestOptions) -> dict[str, Any]:
    """The request as wire data; a field JSON cannot carry (an integer past 64 bits, a lone
    surrogate) is an InvalidRequestError naming it, raised before anything is sent."""
    data = {"params": asdict(params),
            "options": {"slo_class": options.slo_class.name.lower(), "tenant": options.tenant,
                        "timeout": options.timeout}}
    for section in data.values():
        for name, value in section.items():
            _check_sendable(name, value)
    return data


def _check_sendable(name: str, value: Any) -> None:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise errors.InvalidRequestError(f"{name} cannot be sent to the model's worker ({exc}); got "
                                         f"{reprlib.repr(value)}") from None


def decode_request(data: dict[str, Any]) -> tuple[SamplingParams, RequestOptions]:
    params = dict(data["params"])
    params["stop"] = tuple(params["stop"])
    params["stop_token_ids"] = tuple(params["stop_token_ids"])
    if params.get("response_format") is not None:
        params["response_format"] = ResponseFormat(**params["response_format"])
    params["logit_bias"] = tuple((int(i), float(b)) for i, b in params.get("logit_bias", ()))
    return SamplingParams(**params), RequestOptions(**data["options"])


def encode_loop_config(config: LoopConfig) -> dict[str, Any]:
    data = {f.name: getattr(config, f.name) for f in fields(config)}
    data["scheduler"] = asdict(config.scheduler)
    data["slo_targets"] = {cls.name.lower(): asdict(target) for cls, target in config.slo_targets.items()}
    data["tenant_weights"] = dict(config.tenant_weights)
    return data


def decode_loop_config(data: dict[str, Any]) -> LoopConfig:
    data = dict(data)
    data["scheduler"] = SchedulerConfig(**data["scheduler"])
    data["slo_targets"] = {SLOClass.parse(name): SLOTarget(**target) for name, target in data["slo_targets"].items()}
    return LoopConfig(**data)


def decode_stats(data: dict[str, Any]) -> LoopStats:
    return LoopStats(**{f.name: int(data[f.name]) for f in fields(LoopStats)})
