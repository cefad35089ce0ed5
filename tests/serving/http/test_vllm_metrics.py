"""vLLM-compatible metrics (serving/vllm_metrics.py) scraped from a real ``mcp2026 serve`` after real
requests through the official openai client: every metric the Gateway API Inference Extension's
model-server protocol and vLLM's dashboards read has vLLM's name, type, labels and buckets, and
its value moved by what the requests did; ``serving.metrics.vllm: false`` turns them off.
"""

from __future__ import annotations

import time

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcp.base.errors import ConfigError
from mcp.config.runtime import load_config
from mcp.serving.vllm_metrics import REQUEST_BUCKETS, TOKEN_GAP_BUCKETS, TTFT_BUCKETS

pytestmark = pytest.mark.slow
KEY = {"model_name", "engine"}
# The model-server protocol's table (Inference Extension v1, docs/operations.md): name -> type, labels
PROTOCOL = {
    "vllm:num_requests_waiting": ("gauge", KEY),  # TotalQueuedRequests
    "vllm:num_requests_running": ("gauge", KEY),  # TotalRunningRequests
    "vllm:kv_cache_usage_perc": ("gauge", KEY),  # KVCacheUtilization
    "vllm:gpu_cache_usage_perc": ("gauge", KEY),  # KVCacheUtilization, the older name
    "vllm:cache_config_info": ("gauge", KEY | {"block_size", "num_gpu_blocks", "num_cpu_blocks", "cache_dtype",
                                                "enable_prefix_caching"}),  # BlockSize, NumGPUBlocks
    "vllm:lora_requests_info": ("gauge", {"max_lora", "running_lora_adapters", "waiting_lora_adapters"}),
}
COUNTERS = ("vllm:prompt_tokens", "vllm:generation_tokens", "vllm:request_success", "vllm:num_preemptions",
            "vllm:prefix_cache_queries", "vllm:prefix_cache_hits")
HISTOGRAMS = {
    "vllm:time_to_first_token_seconds": TTFT_BUCKETS, "vllm:inter_token_latency_seconds": TOKEN_GAP_BUCKETS,
    "vllm:time_per_output_token_seconds": TOKEN_GAP_BUCKETS,
    "vllm:request_time_per_output_token_seconds": TOKEN_GAP_BUCKETS,
    "vllm:e2e_request_latency_seconds": REQUEST_BUCKETS, "vllm:request_queue_time_seconds": REQUEST_BUCKETS,
    "vllm:request_inference_time_seconds": REQUEST_BUCKETS, "vllm:request_prefill_time_seconds": REQUEST_BUCKETS,
    "vllm:request_decode_time_seconds": REQUEST_BUCKETS, "vllm:request_prompt_tokens": None,
    "vllm:request_generation_tokens": None,
}


STORY = "Once upon a time, in a quiet village by the sea, there lived an old fisherman and his clever cat. " * 2


def scrape(server) -> dict:
    """``/metrics`` parsed: family name -> family (counters without their ``_total``)."""
    answer = httpx.get(server.url + "/metrics", timeout=10.0)
    assert answer.status_code == 200
    return {family.name: family for family in text_string_to_metric_families(answer.text)}


def value(families: dict, sample_name: str, **labels: str) -> float:
    """The sum of the samples called ``sample_name`` whose labels include ``labels``."""
    family = families[sample_name.split("_bucket")[0].removesuffix("_total").removesuffix("_count").removesuffix("_sum")]
    return sum(s.value for s in family.samples
               if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.fixture(scope="module")
def server(start_server, smollm2_auto_mcp):
    """The default model as ``smollm2``, one sequence at a time (so a second request waits)."""
    return start_server({
        "runtime": {"device": "cpu"},
        # 512 blocks of 16 positions, each position 46,080 bytes of fp32 keys and values
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080, "kv_cache_dtype": "fp32", "max_num_seqs": 1},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}]},
    })


def test_the_protocols_metrics_have_vllms_names_types_and_labels(server):
    families = scrape(server)
    for name, (kind, labels) in PROTOCOL.items():
        assert families[name].type == kind, name
        assert [set(s.labels) for s in families[name].samples] == [labels], name
    [info] = families["vllm:cache_config_info"].samples
    assert info.value == 1.0 and info.labels["model_name"] == "smollm2" and info.labels["engine"] == "1"
    assert info.labels["block_size"] == "16" and info.labels["num_gpu_blocks"] == "512"
    assert info.labels["enable_prefix_caching"] == "True" and info.labels["cache_dtype"] == "fp32"
    [lora] = families["vllm:lora_requests_info"].samples
    assert lora.labels == {"max_lora": "0", "running_lora_adapters": "", "waiting_lora_adapters": ""}
    assert abs(lora.value - time.time()) < 3600  # the time of the reading, as the protocol asks
    assert value(families, "vllm:num_requests_running", model_name="smollm2") == 0
    assert value(families, "vllm:kv_cache_usage_perc", model_name="smollm2") == 0


def test_counters_and_histograms_move_by_what_the_requests_did(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    before = scrape(server)
    replies = [client.completions.create(model="smollm2", prompt=STORY, max_tokens=8, temperature=0.0,
                                         extra_body={"ignore_eos": True}) for _ in range(2)]
    chunks = list(client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}],
                                                 max_tokens=6, stream=True, stream_options={"include_usage": True},
                                                 extra_body={"ignore_eos": True}))
    after = scrape(server)
    prompt = sum(r.usage.prompt_tokens for r in replies) + chunks[-1].usage.prompt_tokens
    generated = sum(r.usage.completion_tokens for r in replies) + chunks[-1].usage.completion_tokens
    assert generated == 22
    moved = lambda name, **labels: value(after, name, **labels) - value(before, name, **labels)  # noqa: E731
    assert moved("vllm:prompt_tokens_total", model_name="smollm2", engine="1") == prompt
    assert moved("vllm:generation_tokens_total", model_name="smollm2") == generated
    assert moved("vllm:request_success_total", finished_reason="length") == 3
    assert moved("vllm:prefix_cache_queries_total") >= prompt
    assert moved("vllm:prefix_cache_hits_total") >= 32  # the second completion found the first's full blocks
    for name in COUNTERS:
        assert after[name].type == "counter", name
    for name, buckets in HISTOGRAMS.items():
        assert after[name].type == "histogram", name
        ours = [s for s in after[name].samples if s.name == name + "_bucket"]
        assert {frozenset(s.labels) for s in ours} == {frozenset(KEY | {"le"})}, name
        if buckets is not None:
            assert [float(s.labels["le"]) for s in ours] == [*buckets, float("inf")], name
    for name in set(HISTOGRAMS) - {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}:
        assert moved(name + "_count", model_name="smollm2") == 3, name
    for name in ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"):
        assert moved(name + "_count") == generated - 3, name  # one gap fewer than tokens, per request
    assert moved("vllm:request_generation_tokens_sum") == generated


def test_running_waiting_and_kv_use_while_requests_are_in_flight(server):
    """One long request runs (max_num_seqs 1), a second waits behind it; closing the first's
    stream cancels it, and the gauges fall back to zero."""
    body = {"model": "smollm2", "prompt": "Count:", "max_tokens": 2000, "ignore_eos": True, "stream": True}
    with httpx.Client(base_url=server.url, timeout=120.0) as http:
        with http.stream("POST", "/v1/completions", json=body) as first:
            lines = first.iter_lines()  # kept: a dropped iterator closes the stream, which cancels the request
            assert next(lines).startswith("data: ")
            with http.stream("POST", "/v1/completions", json=body) as second:
                families = wait_for(server, lambda f: value(f, "vllm:num_requests_waiting") == 1)
                assert value(families, "vllm:num_requests_running", model_name="smollm2", engine="1") == 1
                assert 0 < value(families, "vllm:kv_cache_usage_perc") <= 1
                assert value(families, "vllm:gpu_cache_usage_perc") == value(families, "vllm:kv_cache_usage_perc")
                assert second.status_code == 200
    families = wait_for(server, lambda f: value(f, "vllm:num_requests_running") == 0)
    assert value(families, "vllm:num_requests_waiting") == 0
    assert value(families, "vllm:request_success_total", finished_reason="abort") >= 1


def wait_for(server, ready, timeout_s: float = 60.0) -> dict:
    """Scrape until ``ready(families)`` holds (the loop updates its queues between steps)."""
    deadline = time.monotonic() + timeout_s
    while True:
        families = scrape(server)
        if ready(families):
            return families
        assert time.monotonic() < deadline, "the gauges never reached the expected state"
        time.sleep(0.05)


def test_switched_off_only_our_own_metrics_are_served(start_server, tiny_mcp):
    off = start_server({"serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "metrics": {"vllm": False}}})
    families = scrape(off)
    assert not [name for name in families if name.startswith("vllm:")]
    assert families["mcp_num_requests_waiting"].type == "gauge"


@pytest.mark.parametrize("text, error", [
    ("serving:\n  metrics:\n    vllm: maybe\n", "serving.metrics.vllm"),
    ("serving:\n  metrics:\n    vlm: true\n", "serving.metrics.vlm"),
])
def test_a_bad_metrics_switch_is_named(tmp_path, text: str, error: str):
    path = tmp_path / "mcp-config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=error.replace(".", r"\.")):
        load_config(path)
