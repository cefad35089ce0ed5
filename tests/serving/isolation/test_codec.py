"""What crosses the worker channel turns back into the same typed objects."""

from __future__ import annotations

import orjson
import pytest

from mcp.base.errors import CapacityError, ContextLengthError, EngineError, RequestCancelled
from mcp.engine.grammar import ResponseFormat
from mcp.engine.handle import RequestOptions, RequestOutcome
from mcp.engine.hooks import RequestTimings
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.scheduler.slo import SLOClass, SLOTarget
from mcp.engine.sequence import StepOutput
from mcp.serving.isolation import codec


def _wire(data):
    return orjson.loads(orjson.dumps(data))


def test_a_request_round_trips():
    params = SamplingParams(max_tokens=7, temperature=0.5, seed=3, stop=("\n",), stop_token_ids=(2,), logprobs=2)
    options = RequestOptions(slo_class="high", tenant="acme", timeout=4.5)
    assert codec.decode_request(_wire(codec.encode_request(params, options))) == (params, options)
    fmt = ResponseFormat.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}, strict=True)
    params = SamplingParams(max_tokens=7, response_format=fmt)
    assert codec.decode_request(_wire(codec.encode_request(params, options))) == (params, options)


def test_steps_and_outcomes_round_trip():
    step = StepOutput(42, "hi", -0.5, ((42, -0.5), (7, -1.25)), None)
    assert codec.decode_step(_wire(codec.encode_step(step))) == step
    outcome = RequestOutcome("req-9", "error", 5, 2, 1, 0, RequestTimings(1.0, 1.5, 2.0, 1.1), "tail",
                             EngineError("the step failed"))
    back = codec.decode_outcome(_wire(codec.encode_outcome(outcome)), "req-1")
    assert back.request_id == "req-1" and back.timings == outcome.timings and back.tail_text == "tail"
    assert isinstance(back.error, EngineError) and str(back.error) == "the step failed"


def test_the_loop_config_round_trips():
    config = LoopConfig(policy="fcfs", scheduler=SchedulerConfig(max_num_seqs=3), block_size=32,
                        slo_targets={SLOClass.HIGH: SLOTarget(0.2, 0.05)}, tenant_weights={"a": 2.0})
    assert codec.decode_loop_config(_wire(codec.encode_loop_config(config))) == config


@pytest.mark.parametrize("error, kind", [
    (CapacityError("full", 2.5), CapacityError), (ContextLengthError("too long"), ContextLengthError),
    (RequestCancelled("gone"), RequestCancelled), (ValueError("bug"), EngineError),
])
def test_errors_come_back_as_known_classes(error, kind):
    back = codec.decode_error(_wire(codec.encode_error(error)))
    assert type(back) is kind
    if kind is CapacityError:
        assert back.retry_after_s == 2.5


def test_a_class_the_worker_names_freely_is_an_engine_error():
    back = codec.decode_error({"type": "SystemExit", "message": "boo"})
    assert type(back) is EngineError and str(back) == "boo"
