"""Prometheus metrics (vLLM's names with the ``mcp_`` prefix), fed by the engine loop's hooks.

Each loaded model version gets three hooks (engine/hooks.py); they run on its loop thread and
only update counters and histograms. Gauges (running, waiting, KV usage, prefix cache) are
read from ``loop.stats()`` when Prometheus scrapes. Labels are ``model``, ``version`` and
``slo_class`` (plus ``finished_reason`` on the finish counter): never a tenant or request id.
``mcp_request_queue_time_seconds`` is submit -> the request's first chunk in a step (it left
the scheduler's queue; observed when the request ends, not at all for one cancelled while it
waited); prefill time is the rest of the TTFT; decode time is first token -> end. The ``mcp_latency_drift*`` gauges are
the state of mcp.ops.drift's detectors over the e2e and TTFT histograms, ticked on a thread of
their own, so a server without Prometheus still sees its baseline drift.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from mcp.engine.hooks import GenerationCompleted, HookHandle, SequenceStarted, TokenGenerated
from mcp.engine.scheduler.slo import SLOClass, SLOTarget
from mcp.ops.drift import DriftDetector, DriftMonitor, DriftRule, buckets_by_model
from mcp.serving.errors import WireError
from mcp.serving.host import ModelHost, ModelVersion
from mcp.serving.probe import ProbeWindow, Sample

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)
TOKEN_GAP_BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5)
E2E_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)
LABELS = ("model", "version", "slo_class")
_OOM_TEXT = ("out of memory", "can't allocate memory", "cannot allocate memory")


class ServingMetrics:
    """Every metric of one server, in its own registry (``/metrics`` renders it)."""

    def __init__(self, host: ModelHost, probe: ProbeWindow) -> None:
        self.registry = CollectorRegistry()
        self.probe = probe
        self._host = host
        self._hooks: dict[str, list[HookHandle]] = {}
        self._lock = threading.Lock()
        self._slo: dict[tuple[str, str, str], list[int]] = {}  # labels -> [good, all]
        self._oom: dict[tuple[str, str], int] = {}
        self._define()
        self.drift = [DriftDetector("e2e", lambda: buckets_by_model(self.e2e)),
                      DriftDetector("ttft", lambda: buckets_by_model(self.ttft))]
        self.registry.register(_LiveCollector(self))
        DriftMonitor(self.drift, DriftRule().interval_s).start()
        host.add_listeners(self.attach, self.detach)

    def _define(self) -> None:
        r = self.registry
        self.prompt_tokens = Counter("mcp_prompt_tokens", "Prompt tokens processed", LABELS, registry=r)
        self.generation_tokens = Counter("mcp_generation_tokens", "Tokens generated", LABELS, registry=r)
        self.finished = Counter("mcp_request_success", "Requests finished, by reason",
                                (*LABELS, "finished_reason"), registry=r)
        self.preemptions = Counter("mcp_num_preemptions", "Preemptions of running requests", LABELS, registry=r)
        self.ttft = Histogram("mcp_time_to_first_token_seconds", "Submit to first token", LABELS,
                              buckets=LATENCY_BUCKETS, registry=r)
        self.itl = Histogram("mcp_inter_token_latency_seconds", "Gap between two tokens of a request", LABELS,
                             buckets=TOKEN_GAP_BUCKETS, registry=r)
        self.e2e = Histogram("mcp_e2e_request_latency_seconds", "Submit to end", LABELS,
                             buckets=E2E_BUCKETS, registry=r)
        self.queue = Histogram("mcp_request_queue_time_seconds", "Submit to the first chunk in a step",
                               LABELS, buckets=LATENCY_BUCKETS, registry=r)
        self.prefill = Histogram("mcp_request_prefill_time_seconds", "Loop taking the request to first token",
                                 LABELS, buckets=LATENCY_BUCKETS, registry=r)
        self.refused = Counter("mcp_requests_refused", "Requests refused by a rate limit or admission control "
                               "(HTTP 429, gRPC RESOURCE_EXHAUSTED)", ("code", "transport"), registry=r)
        self.decode = Histogram("mcp_request_decode_time_seconds", "First token to end", LABELS,
                                buckets=E2E_BUCKETS, registry=r)

    # -- one loaded version ---------------------------------------------------------------
    def attach(self, version: ModelVersion) -> None:
        """Add this server's hooks to a newly loaded version."""
        recorder = _VersionRecorder(self, version)
        model = version.model
        self._hooks[version.key] = [
            model.add_hook("on_sequence_start", recorder.started),
            model.add_hook("on_token_generated", recorder.token),
            model.add_hook("on_generation_complete", recorder.completed),
        ]

    def detach(self, version: ModelVersion) -> None:
        for handle in self._hooks.pop(version.key, []):
            handle.remove()

    def count_refusal(self, transport: str, wire: WireError) -> None:
        """An error answer: counted when it is a refusal (HTTP 429; over gRPC RESOURCE_EXHAUSTED)."""
        if wire.status == 429:
            self.refused.labels(wire.code or "refused", transport).inc()

    def count_slo(self, labels: tuple[str, str, str], good: bool) -> None:
        with self._lock:
            counts = self._slo.setdefault(labels, [0, 0])
            counts[0] += good
            counts[1] += 1

    def count_oom(self, labels: tuple[str, str]) -> None:
        with self._lock:
            self._oom[labels] = self._oom.get(labels, 0) + 1


class _VersionRecorder:
    """The hooks of one model version (they run on its loop thread, one at a time)."""

    def __init__(self, metrics: ServingMetrics, version: ModelVersion) -> None:
        self.m, self.name, self.version = metrics, version.name, version.version
        self.targets: dict[SLOClass, SLOTarget] = version.model.loop.config.slo_targets
        self.started_at: dict[str, float] = {}
        self.last_token_at: dict[str, float] = {}

    def labels(self, slo_class: str) -> tuple[str, str, str]:
        return self.name, self.version, slo_class

    def started(self, event: SequenceStarted) -> None:
        self.started_at[event.request_id] = time.monotonic()

    def token(self, event: TokenGenerated) -> None:
        last = self.last_token_at.get(event.request_id)
        if last is not None:
            self.m.itl.labels(*self.labels(event.slo_class)).observe(event.time_s - last)
        self.last_token_at[event.request_id] = event.time_s

    def completed(self, event: GenerationCompleted) -> None:
        labels = self.labels(event.slo_class)
        started = self.started_at.pop(event.request_id, event.timings.arrival_s)
        self.last_token_at.pop(event.request_id, None)
        m, t = self.m, event.timings
        m.prompt_tokens.labels(*labels).inc(event.num_prompt_tokens)
        m.generation_tokens.labels(*labels).inc(event.num_output_tokens)
        m.finished.labels(*labels, event.finish_reason).inc()
        m.preemptions.labels(*labels).inc(event.num_preemptions)
        total = t.total_s or 0.0
        m.e2e.labels(*labels).observe(total)
        if t.scheduled_s is not None:
            m.queue.labels(*labels).observe(t.queue_s)
        if t.first_token_s is not None:
            m.ttft.labels(*labels).observe(t.ttft_s)
            m.prefill.labels(*labels).observe(max(0.0, t.first_token_s - (t.scheduled_s or started)))
            m.decode.labels(*labels).observe(t.finished_s - t.first_token_s)
        ok = event.finish_reason in ("stop", "length")
        failed = event.finish_reason in ("error", "deadline")  # a client's cancel is not the server's fault
        oom = event.error is not None and any(text in event.error.lower() for text in _OOM_TEXT)
        if oom:
            m.count_oom(labels[:2])
        m.count_slo(labels, ok and self._met_targets(event))
        m.probe.add(Sample(t.finished_s or time.monotonic(), self.name, self.version, total, t.ttft_s, not failed, oom,
                           event.num_output_tokens))

    def _met_targets(self, event: GenerationCompleted) -> bool:
        target = self.targets.get(SLOClass.parse(event.slo_class))
        t = event.timings
        if target is None or t.ttft_s is None:
            return False
        n = event.num_output_tokens
        tpot = (t.total_s - t.ttft_s) / (n - 1) if n > 1 else 0.0
        return t.ttft_s <= target.ttft_s and tpot <= target.tpot_s


class _LiveCollector:
    """Gauges read at scrape time: each loaded version's loop stats, SLO attainment, OOMs."""

    def __init__(self, metrics: ServingMetrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator:
        labels = ["model", "version"]
        running = GaugeMetricFamily("mcp_num_requests_running", "Requests in the running batch", labels=labels)
        waiting = GaugeMetricFamily("mcp_num_requests_waiting", "Requests waiting to run", labels=labels)
        kv = GaugeMetricFamily("mcp_kv_cache_usage_perc", "Share of KV blocks in use (0-1)", labels=labels)
        queries = CounterMetricFamily("mcp_prefix_cache_queries", "Prompt tokens looked up", labels=labels)
        hits = CounterMetricFamily("mcp_prefix_cache_hits", "Prompt tokens found cached", labels=labels)
        ready = GaugeMetricFamily("mcp_model_load_to_ready_seconds", "Load call to first token", labels=labels)
        for version in self.m._host.versions():
            key = [version.name, version.version]
            try:
                stats = version.model.loop.stats()
            except Exception:  # noqa: BLE001 - unloaded between the listing and the read
                continue
            running.add_metric(key, stats.num_running)
            waiting.add_metric(key, stats.num_waiting)
            kv.add_metric(key, 1.0 - stats.num_free_blocks / stats.num_blocks if stats.num_blocks else 0.0)
            queries.add_metric(key, stats.prefix_query_tokens)
            hits.add_metric(key, stats.prefix_hit_tokens)
            ready.add_metric(key, version.load_to_ready_s)
        yield from (running, waiting, kv, queries, hits, ready, *self._slo(), self._oom(), *self._drift(),
                    *self._workers())

    def _slo(self) -> Iterator:
        good = CounterMetricFamily("mcp_slo_good_requests", "Requests that met their class's TTFT and TPOT",
                                   labels=LABELS)
        total = CounterMetricFamily("mcp_slo_requests", "Requests scored against their class's SLO", labels=LABELS)
        share = GaugeMetricFamily("mcp_slo_attainment", "Good / all requests, per class", labels=LABELS)
        with self.m._lock:
            counts = dict(self.m._slo)
        for labels, (num_good, num_all) in counts.items():
            good.add_metric(list(labels), num_good)
            total.add_metric(list(labels), num_all)
            share.add_metric(list(labels), num_good / num_all)
        return good, total, share

    def _drift(self) -> tuple[GaugeMetricFamily, ...]:
        """The in-process drift detector's state (mcp.ops.drift), per model and latency."""
        labels = ["model", "latency"]
        drifting = GaugeMetricFamily("mcp_latency_drift", "1 while p95 > 2x its 7-day median for 3 min", labels=labels)
        value = GaugeMetricFamily("mcp_latency_drift_p95_seconds", "p95 over the last 5 min", labels=labels)
        baseline = GaugeMetricFamily("mcp_latency_drift_baseline_seconds", "Median of the p95s of 7 days",
                                     labels=labels)
        for detector in self.m.drift:
            for state in detector.states():
                key = [state.model, detector.name]
                drifting.add_metric(key, float(state.drifting))
                value.add_metric(key, state.value_s)
                baseline.add_metric(key, state.baseline_s)
        return drifting, value, baseline

    def _workers(self) -> tuple[GaugeMetricFamily, CounterMetricFamily]:
        """Each isolated worker: up (1) or restarting/given up (0), and its restarts."""
        from mcp.serving.isolation.models import worker_loop

        labels = ["model", "version"]
        up = GaugeMetricFamily("mcp_worker_up", "1 while the model's worker process runs", labels=labels)
        restarts = CounterMetricFamily("mcp_worker_restarts", "Restarts of the model's worker after a crash",
                                       labels=labels)
        for version in self.m._host.versions():
            loop = worker_loop(version.model)
            if loop is not None:
                key = [version.name, version.version]
                up.add_metric(key, float(loop.supervisor.process is not None))
                restarts.add_metric(key, loop.supervisor.num_restarts)
        return up, restarts

    def _oom(self) -> CounterMetricFamily:
        oom = CounterMetricFamily("mcp_oom", "Requests ended by an out-of-memory error", labels=["model", "version"])
        with self.m._lock:
            for labels, count in self.m._oom.items():
                oom.add_metric(list(labels), count)
        return oom
