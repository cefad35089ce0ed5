"""Cost of RouteTable.resolve: p50/p99 microseconds per call, one thread.

A 12-route table (the docs/governance.md example plus filler routes), and request
contexts that take each path: an early route, a late route, a weighted split, the
default. Each call is timed on its own with perf_counter_ns (so the figures include
about 0.1 us of timer overhead). Prints a markdown table for benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/route_resolve.py [--calls 200000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from mcp.gateway.routing import RequestContext, parse_route_table

FILLER = "".join(
    f"  - name: filler-{i}\n    conditions: {{tenant: [tenant-{i}, other-{i}], sla_class: [low]}}\n"
    f"    backend: {{model_id: 'filler:{i}', instance_pool: pool-{i}}}\n" for i in range(8))
TABLE = f"""routes:
  - name: premium-short
    conditions: {{user_tier: premium, max_input_tokens: 512, sla_class: [critical, high]}}
    backend: {{model_id: 'qwen2-7b-chat:v2.4', instance_pool: gpu-a10-pool, timeout_ms: 8000}}
{FILLER}  - name: eu
    conditions: {{headers: {{x-region: 'eu-*'}}, metadata: {{team: [search, ads]}}}}
    backend: {{model_id: 'eu:3', instance_pool: eu}}
  - name: acme-long
    conditions: {{tenant: acme, min_input_tokens: 2048}}
    backend: {{model_id: 'long@production', instance_pool: long}}
  - name: support-canary
    conditions: {{model: support-bot}}
    split:
      arms:
        - {{name: stable, weight: 95, backend: {{model_id: 'support-bot@production'}}}}
        - {{name: canary, weight: 5, backend: {{model_id: 'support-bot@canary'}}}}
default: {{backend: {{model_id: 'smollm2:1', instance_pool: cpu}}}}
"""
CASES = {
    "first route": lambda i: RequestContext(user_tier="premium", sla_class="high", input_tokens=100),
    "route 11 (header glob)": lambda i: RequestContext(headers={"X-Region": "eu-west"}, metadata={"team": "ads"}),
    "split, sticky by user": lambda i: RequestContext(model="support-bot", user_id=f"user-{i % 5000}"),
    "default (no match)": lambda i: RequestContext(tenant="nobody", input_tokens=10),
}


def measure(table, make, calls: int) -> list[float]:
    contexts = [make(i) for i in range(min(calls, 5000))]
    timings = []
    clock = time.perf_counter_ns
    for i in range(calls):
        ctx = contexts[i % len(contexts)]
        start = clock()
        table.resolve(ctx)
        timings.append((clock() - start) / 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    table = parse_route_table(TABLE, source="benchmark")
    print(f"| path | calls | p50 µs | p99 µs | mean µs |\n|---|---|---|---|---|")
    for name, make in CASES.items():
        measure(table, make, 2000)  # warm up
        timings = sorted(measure(table, make, args.calls))
        p50, p99 = timings[len(timings) // 2], timings[int(len(timings) * 0.99)]
        print(f"| {name} | {args.calls:,} | {p50:.2f} | {p99:.2f} | {statistics.fmean(timings):.2f} |")


if __name__ == "__main__":
    main()
