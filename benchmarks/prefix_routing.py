"""What prefix-aware picking saves: TTFT and throughput of a shared-system-prompt workload over
three ``mcp2026 serve`` members behind ``mcp2026 gateway``, least-outstanding picking against
``picking: prefix``, in one run.

The workload: ``--prompts`` system prompts of about 1,500 characters (a few hundred tokens), each
shared by many requests that differ in a short user question; ``--concurrency`` clients send
``--requests`` streamed chat requests per phase. Each member's KV cache holds only a few of the
system prompts (``--kv-blocks``), as a busy server's does: under least-outstanding picking every
prompt visits every member and they evict each other; under prefix picking each prompt lives on
one member. Each phase has system prompts of its own (same sizes), so neither inherits the other's
cache. Prints per phase: TTFT p50/p95 (send -> first content chunk), requests/s, output tokens/s
and the prefix cache hit tokens the members report (``vllm:prefix_cache_hits_total``).

    .venv/bin/python benchmarks/prefix_routing.py [--requests 60] [--prompts 9] [--concurrency 3]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from gateway_overhead import _free_port, _spawn  # noqa: E402

MODEL = "smollm2-135m-instruct"
TOPICS = ("shipping", "billing", "returns", "warranty", "insurance", "travel", "banking", "telecom", "energy",
          "healthcare", "education", "retail")
QUESTIONS = ("Where is my order?", "How do I change my address?", "Can I get a refund?", "What are your hours?",
             "Is there a fee for this?", "How long does it take?", "Who do I call about this?", "Can you help me?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60, help="streamed chat requests per phase (default 60)")
    parser.add_argument("--prompts", type=int, default=9, help="distinct system prompts per phase (default 9)")
    parser.add_argument("--concurrency", type=int, default=3, help="requests in flight (default 3)")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--kv-blocks", type=int, default=160, help="KV blocks of 16 positions per member (default 160)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder, processes = Path(name), []
        try:
            members = [_start_member(folder, i, args.kv_blocks, processes) for i in range(3)]
            gateways = {picking: _start_gateway(folder, picking, members, processes)
                        for picking in ("least_outstanding", "prefix")}
            print(f"3 members ({MODEL}, {args.kv_blocks} KV blocks each), {args.requests} requests per phase, "
                  f"{args.prompts} system prompts, {args.concurrency} in flight, max_tokens {args.max_tokens}\n")
            print("| picking | TTFT p50 ms | TTFT p95 ms | requests/s | output tokens/s | prefix hit tokens |")
            print("|---|---|---|---|---|---|")
            for phase, (picking, url) in enumerate(gateways.items()):
                prompts = [_system_prompt(TOPICS[(phase * args.prompts + i) % len(TOPICS)], phase, i)
                           for i in range(args.prompts)]
                hits_before = _prefix_hits(members)
                ttfts, tokens, wall = asyncio.run(_phase(url, prompts, args))
                hits = _prefix_hits(members) - hits_before
                print(f"| {picking} | {_pct(ttfts, 50):.0f} | {_pct(ttfts, 95):.0f} | {len(ttfts) / wall:.2f} | "
                      f"{tokens / wall:.1f} | {hits:.0f} |")
        finally:
            for process in processes:
                process.terminate()
                process.wait(30)


def _system_prompt(topic: str, phase: int, index: int) -> str:
    rules = " ".join(f"Rule {k}: when a customer asks about {topic} item {k}, answer with the policy for item {k}, "
                     f"in plain words, and never promise what policy {k} does not allow." for k in range(1, 10))
    return f"[phase {phase}, desk {index}] You are the {topic} help desk of Example Corp. {rules}"


async def _phase(url: str, prompts: list[str], args: argparse.Namespace) -> tuple[list[float], int, float]:
    rng = random.Random(7)
    jobs = [(rng.choice(prompts), rng.choice(QUESTIONS)) for _ in range(args.requests)]
    limit = asyncio.Semaphore(args.concurrency)
    ttfts: list[float] = []
    tokens = 0
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        async def one(system: str, question: str) -> None:
            nonlocal tokens
            async with limit:
                body = {"model": "smollm2", "max_tokens": args.max_tokens, "temperature": 0.0, "stream": True,
                        "stream_options": {"include_usage": True},
                        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}]}
                started = time.perf_counter()
                first = None
                async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                    assert response.status_code == 200, await response.aread()
                    async for line in response.aiter_lines():
                        if first is None and '"content":"' in line and '"content":""' not in line:
                            first = time.perf_counter() - started
                        if '"usage":{' in line:
                            tokens += int(line.split('"completion_tokens":')[1].split(",")[0].split("}")[0])
                ttfts.append(first if first is not None else time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(one(s, q) for s, q in jobs))
    return ttfts, tokens, time.perf_counter() - started


def _prefix_hits(members: list[str]) -> float:
    total = 0.0
    for url in members:
        for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
            if line.startswith("vllm:prefix_cache_hits_total{"):
                total += float(line.rsplit(" ", 1)[1])
    return total


def _start_member(folder: Path, index: int, kv_blocks: int, processes: list) -> str:
    port = _free_port()
    config = folder / f"serve-{index}.yaml"
    config.write_text(yaml.safe_dump({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": kv_blocks * 16 * 46080, "kv_cache_dtype": "fp32"},
        "serving": {"host": "127.0.0.1", "port": port, "models": [{"name": "smollm2", "source": MODEL}]}}))
    return _spawn(["serve", "--config", str(config)], port, "/ready", folder / f"serve-{index}.log", processes)


def _start_gateway(folder: Path, picking: str, members: list[str], processes: list) -> str:
    port = _free_port()
    config, rules = folder / f"gateway-{picking}.yaml", folder / f"routes-{picking}.yaml"
    pool = {"members": [{"name": f"m{i}", "url": url} for i, url in enumerate(members)], "picking": picking}
    config.write_text(yaml.safe_dump({"gateway": {"port": port}, "pools": {"p": pool}}))
    rules.write_text(yaml.safe_dump({"default": {"backend": {"model_id": "smollm2:1", "instance_pool": "p"}}}))
    return _spawn(["gateway", "--config", str(config), "--rules", str(rules)], port, "/health",
                  folder / f"gateway-{picking}.log", processes)


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000


if __name__ == "__main__":
    main()
