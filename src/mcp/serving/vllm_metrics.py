"""vLLM-compatible metrics beside ours (``vllm:`` names), so that the Kubernetes ecosystem that
reads vLLM's names works with our pods unchanged: the Gateway API Inference Extension's endpoint
picker (model-server protocol: queue, KV use, LoRA and cache-config metrics), KEDA and HPA
autoscalers, and vLLM's Grafana dashboards.

Names, types, help texts and buckets are vLLM v1's (``vllm/v1/metrics/loggers.py``); labels are
``model_name`` (the served model's name) and ``engine``. vLLM numbers its data-parallel engines
there; here ``engine`` is the loaded version, so two versions of one model (a hot swap, a
canary) never collide and vLLM's dashboards, which sum over ``engine``, add them up. The
meanings are ours as docs/operations.md lists them: running = in the batch, waiting = queued,
KV use = 1 - free/all blocks. ``mcp_`` metrics stay as they were; ``serving.metrics.vllm``
turns these off.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from mcp.engine.hooks import GenerationCompleted, HookHandle, TokenGenerated
from mcp.engine.loop_config import LoopConfig
from mcp.serving.host import ModelHost, ModelVersion

LABELS = ("model_name", "engine")
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
TOKEN_GAP_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                     20.0, 40.0, 80.0)
REQUEST_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                   240.0, 480.0, 960.0, 1920.0, 7680.0)
# vLLM's 1-2-5 series up to max_model_len; one server holds several models, so up to 100,000
TOKEN_COUNT_BUCKETS = tuple(float(m * 10 ** e) for e in range(6) for m in (1, 2, 5) if m * 10 ** e <= 100_000)
FINISH_REASONS = {"stop": "stop", "length": "length", "cancelled": "abort", "deadline": "abort", "error": "abort"}


class VllmMetrics:
    """vLLM's metrics of one server, in the server's registry, fed by hooks and scrape-time reads."""

    def __init__(self, host: ModelHost, registry: CollectorRegistry) -> None:
        self._host = host
        self._hooks: dict[str, list[HookHandle]] = {}
        self._define(registry)
        registry.register(_VllmLiveCollector(host))
        host.add_listeners(self.attach, self.detach)

    def _define(self, r: CollectorRegistry) -> None:
        def histogram(name: str, text: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(f"vllm:{name}", text, LABELS, buckets=buckets, registry=r)

        def counter(name: str, text: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(f"vllm:{name}", text, (*LABELS, *extra), registry=r)

        self.prompt_tokens = counter("prompt_tokens", "Number of prefill tokens processed.")
        self.generation_tokens = counter("generation_tokens", "Number of generation tokens processed.")
        self.success = counter("request_success", "Count of successfully processed requests.", ("finished_reason",))
        self.preemptions = counter("num_preemptions", "Cumulative number of preemption from the engine.")
        self.prompt_hist = histogram("request_prompt_tokens", "Number of prefill tokens processed.",
                                     TOKEN_COUNT_BUCKETS)
        self.generation_hist = histogram("request_generation_tokens", "Number of generation tokens processed.",
                                         TOKEN_COUNT_BUCKETS)
        self.ttft = histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                              TTFT_BUCKETS)
        self.itl = histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                             TOKEN_GAP_BUCKETS)
        self.tpot = histogram("time_per_output_token_seconds",
                              "Histogram of time per output token in seconds. DEPRECATED: Use "
                              "vllm:inter_token_latency_seconds instead.", TOKEN_GAP_BUCKETS)
        self.request_tpot = histogram("request_time_per_output_token_seconds",
                                      "Histogram of time_per_output_token_seconds per request.", TOKEN_GAP_BUCKETS)
        self.e2e = histogram("e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                             REQUEST_BUCKETS)
        self.queue = histogram("request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                               REQUEST_BUCKETS)
        self.inference = histogram("request_inference_time_seconds",
                                   "Histogram of time spent in RUNNING phase for request.", REQUEST_BUCKETS)
        self.prefill = histogram("request_prefill_time_seconds",
                                 "Histogram of time spent in PREFILL phase for request.", REQUEST_BUCKETS)
        self.decode = histogram("request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
                                REQUEST_BUCKETS)

    def attach(self, version: ModelVersion) -> None:
        """Add the hooks that feed the per-request metrics to a newly loaded version."""
        recorder = _VllmRecorder(self, version)
        self._hooks[version.key] = [version.model.add_hook("on_token_generated", recorder.token),
                                    version.model.add_hook("on_generation_complete", recorder.completed)]

    def detach(self, version: ModelVersion) -> None:
        for handle in self._hooks.pop(version.key, []):
            handle.remove()


class _VllmRecorder:
    """One version's hooks (on its loop thread): token gaps as they come, the rest at the end."""

    def __init__(self, metrics: VllmMetrics, version: ModelVersion) -> None:
        self.m, self.labels = metrics, (version.name, version.version)
        self.last_token_at: dict[str, float] = {}

    def token(self, event: TokenGenerated) -> None:
        last = self.last_token_at.get(event.request_id)
        if last is not None:
            self.m.itl.labels(*self.labels).observe(event.time_s - last)
            self.m.tpot.labels(*self.labels).observe(event.time_s - last)
        self.last_token_at[event.request_id] = event.time_s

    def completed(self, event: GenerationCompleted) -> None:
        self.last_token_at.pop(event.request_id, None)
        m, labels = self.m, self.labels
        m.prompt_tokens.labels(*labels).inc(event.num_prompt_tokens)
        m.generation_tokens.labels(*labels).inc(event.num_output_tokens)
        m.success.labels(*labels, FINISH_REASONS.get(event.finish_reason, "abort")).inc()
        m.preemptions.labels(*labels).inc(event.num_preemptions)
        m.prompt_hist.labels(*labels).observe(event.num_prompt_tokens)
        m.generation_hist.labels(*labels).observe(event.num_output_tokens)
        self._timings(event)

    def _timings(self, event: GenerationCompleted) -> None:
        """The phase histograms: queue = arrival -> scheduled, prefill = scheduled -> first
        token, decode = first token -> end, inference = scheduled -> end."""
        m, labels, t = self.m, self.labels, event.timings
        finished = t.finished_s if t.finished_s is not None else time.monotonic()
        m.e2e.labels(*labels).observe(finished - t.arrival_s)
        if t.scheduled_s is not None:
            m.queue.labels(*labels).observe(t.scheduled_s - t.arrival_s)
            m.inference.labels(*labels).observe(finished - t.scheduled_s)
        if t.first_token_s is None:
            return
        m.ttft.labels(*labels).observe(t.first_token_s - t.arrival_s)
        m.prefill.labels(*labels).observe(max(0.0, t.first_token_s - (t.scheduled_s or t.arrival_s)))
        m.decode.labels(*labels).observe(finished - t.first_token_s)
        if event.num_output_tokens > 1:
            m.request_tpot.labels(*labels).observe((finished - t.first_token_s) / (event.num_output_tokens - 1))


class _VllmLiveCollector:
    """Gauges and counters read from each loaded version's loop when Prometheus scrapes."""

    def __init__(self, host: ModelHost) -> None:
        self._host = host

    def collect(self) -> Iterator:
        labels = list(LABELS)
        running = GaugeMetricFamily("vllm:num_requests_running", "Number of requests in model execution batches.",
                                    labels=labels)
        waiting = GaugeMetricFamily("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                                    labels=labels)
        kv = GaugeMetricFamily("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels=labels)
        gpu_kv = GaugeMetricFamily("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage."
                                   "DEPRECATED: Use vllm:kv_cache_usage_perc instead.", labels=labels)
        queries = CounterMetricFamily("vllm:prefix_cache_queries",
                                      "Prefix cache queries, in terms of number of queried tokens.", labels=labels)
        hits = CounterMetricFamily("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
                                   labels=labels)
        info = _CacheConfigInfo()
        for version in self._host.versions():
            key = [version.name, version.version]
            try:
                loop = version.model.loop
                stats = loop.stats()
            except Exception:  # noqa: BLE001 - unloaded (or its worker restarting) between listing and read
                continue
            used = 1.0 - stats.num_free_blocks / stats.num_blocks if stats.num_blocks else 0.0
            running.add_metric(key, stats.num_running)
            waiting.add_metric(key, stats.num_waiting)
            kv.add_metric(key, used)
            gpu_kv.add_metric(key, used)
            queries.add_metric(key, stats.prefix_query_tokens)
            hits.add_metric(key, stats.prefix_hit_tokens)
            info.add(key, loop.config, stats.num_blocks)
        yield from (running, waiting, kv, gpu_kv, queries, hits, info.family, _lora_info())


class _CacheConfigInfo:
    """``vllm:cache_config_info``: a gauge at 1 whose labels carry the KV cache's shape (the
    endpoint picker reads ``block_size`` and ``num_gpu_blocks`` from them)."""

    NAMES = ["model_name", "engine", "block_size", "num_gpu_blocks", "num_cpu_blocks", "cache_dtype",
             "enable_prefix_caching"]

    def __init__(self) -> None:
        self.family = GaugeMetricFamily("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                                        labels=self.NAMES)

    def add(self, key: list[str], config: LoopConfig, num_blocks: int) -> None:
        values = [str(config.block_size), str(num_blocks), "0", config.kv_cache_dtype,
                  str(config.enable_prefix_caching)]
        self.family.add_metric([*key, *values], 1.0)


def _lora_info() -> GaugeMetricFamily:
    """``vllm:lora_requests_info``: the model-server protocol's LoRA gauge, its value the time of
    the reading. The engine has no LoRA adapters yet, so its lists are empty and max_lora 0."""
    family = GaugeMetricFamily("vllm:lora_requests_info", "Running stats on lora requests.",
                               labels=["max_lora", "waiting_lora_adapters", "running_lora_adapters"])
    family.add_metric(["0", "", ""], time.time())
    return family
