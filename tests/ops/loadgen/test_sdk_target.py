"""The in-process target on the real model: a tiny seeded run end to end, and stopping late requests.

The requests carry no slo_class/tenant (``send_slo_options=False``), so this runs on an SDK
with or without SLO classes.
"""

from __future__ import annotations

import pytest

from mcp.ops.loadgen.bench import run_bench
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.record import OK, TIMEOUT
from mcp.ops.loadgen.runner import run_workload
from mcp.ops.loadgen.sdk_target import InProcessTarget
from mcp.ops.loadgen.workload import RequestSpec, WorkloadSpec, build_workload
from mcp.runtime.session import Session


@pytest.fixture(scope="module")
def model(smollm2_auto_mcp):
    with Session() as session:
        yield session.load_model(smollm2_auto_mcp)


def test_the_target_streams_what_infer_answers(model):
    request = RequestSpec(0, 0.0, "What is the capital of France?", 0, 8, "high", "a")
    stream = InProcessTarget(model, send_slo_options=False).open(request)
    text = "".join(stream)
    assert text == model.infer(request.prompt, max_tokens=8, temperature=0.0, ignore_eos=True).text
    assert "Paris" in text


def test_a_tiny_seeded_run_end_to_end(model):
    spec = WorkloadSpec("bursty-zipf", rate=3.0, num_requests=4, max_tokens=6, seed=1)
    (run,) = run_bench(InProcessTarget(model, send_slo_options=False), spec, [3.0], SLOTable.default())
    assert [r.index for r in run.records] == [0, 1, 2, 3]
    assert [(r.slo_class, r.tenant, r.prompt_index) for r in run.records] == \
        [(r.slo_class, r.tenant, r.prompt_index) for r in build_workload(spec)]
    for record in run.records:
        assert record.status == OK, record.error
        assert 0 <= record.sent_s - record.scheduled_s < 0.5
        assert record.sent_s < record.chunk_times_s[0] and list(record.chunk_times_s) == sorted(record.chunk_times_s)
        assert record.chunk_times_s[-1] <= record.end_s
        # exact from .result where the SDK's stream has it, else the number of deltas
        assert 1 <= record.output_tokens <= 6 and record.output_tokens >= len(record.chunk_times_s) - 1
    overall = run.summary.overall
    assert (overall.num_requests, overall.num_ok) == (4, 4)
    assert run.summary.duration_s == max(r.end_s for r in run.records)
    assert overall.ttft.count == 4 and overall.e2e.p50 > overall.ttft.p50 > 0


def test_requests_still_running_after_the_drain_time_are_stopped(model):
    requests = [RequestSpec(0, 0.0, "Tell a long story about a dragon.", 0, 400, "low", "a")]
    result = run_workload(InProcessTarget(model, send_slo_options=False), requests, drain_timeout_s=0.5)
    (record,) = result.records
    assert record.status == TIMEOUT
    assert 0 < len(record.chunk_times_s) < 400
    assert result.duration_s < 5.0
