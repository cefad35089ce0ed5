"""The gateway's Prometheus metrics (``/metrics``), on a registry of its own.

Counters and histograms are updated on the request path; breaker states, outstanding requests,
member health and rollout weights are gauges read from the pools and the router at scrape time.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.8, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("mcp_gateway_requests", "Requests answered, by route, arm, pool and status",
                                ["route", "arm", "pool", "status"], registry=r)
        self.decisions = Counter("mcp_gateway_route_decisions", "Routing decisions, by route and split arm",
                                 ["route", "arm"], registry=r)
        self.upstream_latency = Histogram("mcp_gateway_upstream_latency_seconds",
                                          "Upstream time to response headers (streams) or whole body",
                                          ["pool", "member"], buckets=LATENCY_BUCKETS, registry=r)
        self.request_latency = Histogram("mcp_gateway_request_latency_seconds",
                                         "Whole request as the gateway saw it, by route",
                                         ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.retries = Counter("mcp_gateway_retries", "Attempts retried on another member, by pool and reason",
                               ["pool", "reason"], registry=r)
        self.fallbacks = Counter("mcp_gateway_fallbacks", "Fallback backends taken, by route and reason",
                                 ["route", "reason"], registry=r)
        self.breaker_state = Gauge("mcp_gateway_breaker_state", "Circuit breaker: 0 closed, 1 half-open, 2 open",
                                   ["pool", "member"], registry=r)
        self.breaker_opened = Gauge("mcp_gateway_breaker_opened", "Times the member's breaker opened",
                                    ["pool", "member"], registry=r)
        self.outstanding = Gauge("mcp_gateway_member_outstanding", "Requests in flight to the member",
                                 ["pool", "member"], registry=r)
        self.healthy = Gauge("mcp_gateway_member_healthy", "Last active health check passed (1) or not (0)",
                             ["pool", "member"], registry=r)
        self.rollout_weight = Gauge("mcp_gateway_rollout_canary_weight", "Canary arm percent set by a rollout",
                                    ["route"], registry=r)
