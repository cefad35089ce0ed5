"""What governance adds to one request: detectors + input policy + output check + audit write.

Runs the real ``GovernancePlane`` (shipped policies, in-process Rego, an SQLite audit file with
``synchronous=FULL`` or the database ``--audit-url`` names) on a 4 KB prompt and a 1 KB answer,
one request at a time, and prints p50/p99 per part and for the whole, against the issue's
target (5 ms p99), as a ratio. Nothing else runs: the figure is the plane's own cost.

    .venv/bin/python benchmarks/governance_overhead.py [--num-requests 500] [--audit-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from mcp.governance.audit.log import AuditLog
from mcp.governance.detectors.scanner import Scanner
from mcp.governance.plane import GovernancePlane, InferenceOutcome, InferenceRequest
from mcp.governance.policy.bundle import SHIPPED
from mcp.governance.policy.engine import RegoPolicyEngine
from mcp.governance.tracing.spans import InferenceTracer

TARGET_P99_MS = 5.0
PROMPT = ("Please summarise the meeting notes below for the quarterly report. We met in Paris at 10:30 on "
          "2024-01-15; Anna (anna.berg@example.org) presented the budget, 3 risks and 12 actions. ") * 40
ANSWER = "The meeting covered the budget, three risks and twelve actions; Anna will follow up next week. " * 11


def _percentiles(samples_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _one(plane: GovernancePlane, i: int, parts: dict[str, list[float]]) -> None:
    started = time.perf_counter()
    inference = await plane.admit(InferenceRequest(
        request_id=f"bench-{i}", route="POST /v1/chat/completions", operation="chat", tenant="acme",
        model="smollm2", prompt_texts=(PROMPT[:4096],), max_tokens=256, user=f"user-{i % 50}"))
    admitted = time.perf_counter()
    guard = inference.output_guard()
    text = guard.feed(ANSWER[:1024]) + guard.flush()
    checked = time.perf_counter()
    await inference.finish(InferenceOutcome(status="ok", model_key="smollm2:1", outputs=(text,),
                                            prompt_tokens=1000, completion_tokens=250))
    finished = time.perf_counter()
    parts["input (detectors + policy)"].append((admitted - started) * 1e3)
    parts["output check"].append((checked - admitted) * 1e3)
    parts["audit write (committed)"].append((finished - checked) * 1e3)
    parts["total"].append((finished - started) * 1e3)


async def _run(plane: GovernancePlane, num_requests: int) -> dict[str, list[float]]:
    parts: dict[str, list[float]] = {"input (detectors + policy)": [], "output check": [],
                                     "audit write (committed)": [], "total": []}
    for i in range(20):  # warm-up: compiled paths, connections
        await _one(plane, -i - 1, {k: [] for k in parts})
    for i in range(num_requests):
        await _one(plane, i, parts)
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-requests", type=int, default=500)
    parser.add_argument("--audit-url", help="default: a fresh SQLite file in a temporary folder")
    parser.add_argument("--sqlite-sync", choices=("full", "normal"), default="full",
                        help="SQLite's synchronous setting for the audit file (default full: an fsync per commit)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        audit = AuditLog.open(args.audit_url or f"sqlite:///{Path(folder) / 'audit.db'}", str(Path(folder) / "key"),
                              args.sqlite_sync)
        plane = GovernancePlane(RegoPolicyEngine(SHIPPED), Scanner(), InferenceTracer("bench"), audit)
        try:
            parts = asyncio.run(_run(plane, args.num_requests))
        finally:
            plane.close()
    print(f"governance overhead per request, {args.num_requests} requests, 4 KB prompt, 1 KB answer, "
          f"audit {args.audit_url or f'SQLite (synchronous={args.sqlite_sync.upper()})'}")
    for name, samples in parts.items():
        p50, p99 = _percentiles(samples)
        print(f"  {name:28} p50 {p50:7.3f} ms   p99 {p99:7.3f} ms")
    p50, p99 = _percentiles(parts["total"])
    print(f"p99 {p99:.3f} ms vs target {TARGET_P99_MS:.1f} ms: ratio {p99 / TARGET_P99_MS:.2f} "
          f"({'within' if p99 <= TARGET_P99_MS else 'OVER'} the target)")


if __name__ == "__main__":
    main()
