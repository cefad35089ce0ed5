"""Serving figures: hot-swap load-to-ready time, and HTTP TTFT against the in-process SDK's.

    .venv/bin/python benchmarks/serving_bench.py [MODEL] [--swaps 5] [--requests 10]

MODEL is a .mcp path or a catalog name (default smollm2-135m-instruct). Prints numbers; not a test.

1. load-to-ready: ``ModelHost.load`` of a new version of the served model while it serves
   (the swap path of ``POST /admin/models``): the load call, and the load plus a first token.
   Compared with the brief's 100 ms hot-plug target as a ratio. With worker isolation (the
   default on Linux) each swap first waits until the spare worker is idle (the time it waited
   is printed apart: a swap sooner than a spare's start-up after the last one starts its own
   worker), and the memory of an idle spare is printed beside a serving worker's.
2. TTFT: the same greedy prompt, streamed, alternately to a model loaded in this process
   (``model.stream``) and through a real ``mcp2026 serve`` process on 127.0.0.1
   (``/v1/completions``, httpx); one request at a time, so neither competes with the other, and
   both prefix caches are warm after the first round. Also the gap between streamed tokens.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost
from mcp.serving.isolation.models import worker_loop

TARGET_S = 0.100
PROMPT = "Write one sentence about the sea."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="smollm2-135m-instruct")
    parser.add_argument("--swaps", type=int, default=5)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="torch threads of each process (default: all)")
    args = parser.parse_args()
    if args.swaps:
        measure_swaps(args.model, args.swaps, args.threads)
    if args.requests:
        measure_ttft(args.model, args.requests, args.max_tokens, args.threads)


def measure_swaps(model: str, num_swaps: int, threads: int | None) -> None:
    with Session(RuntimeConfig(device="cpu", num_threads=threads)) as session:
        host = ModelHost(session)
        host.load(ServedModel("m", model, "0"))  # the first load also warms the page cache
        spares = getattr(host.loader, "spares", None)
        loads, readies, waits, num_from_spare, memory, serving = [], [], [], 0, None, None
        for version in range(1, num_swaps + 1):
            if spares is not None:
                started = time.perf_counter()
                spares.wait_ready(300.0)
                waits.append(time.perf_counter() - started)
                if memory is None and spares.pids:
                    memory = _memory(spares.pids[0])
            loaded = host.load(ServedModel("m", model, str(version)))
            loads.append(loaded.load_s)
            readies.append(loaded.load_to_ready_s)
            loop = worker_loop(loaded.model)
            num_from_spare += bool(loop is not None and loop.supervisor.from_spare)
            serving = _memory(loop.supervisor.process.pid) if loop is not None else None
        host.close()
    print(f"hot swap of {model}, {num_swaps} swaps (median, min-max), {num_from_spare} from a spare worker:")
    for label, values in (("load call", loads), ("load to ready (first token)", readies)):
        median = statistics.median(values)
        print(f"  {label:30} {median * 1000:8.1f} ms  ({min(values) * 1000:.1f}-{max(values) * 1000:.1f})"
              f"  = {median / TARGET_S:.2f}x the 100 ms target")
    if waits:
        print(f"  waited for the spare before each swap: median {statistics.median(waits) * 1000:.0f} ms "
              f"(max {max(waits) * 1000:.0f})")
    if memory and serving:
        print(f"  memory: idle spare RSS {memory[0]:.0f} MiB, PSS {memory[1]:.0f} MiB; "
              f"a serving worker RSS {serving[0]:.0f} MiB, PSS {serving[1]:.0f} MiB")


def _memory(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process in MiB, from /proc/PID/smaps_rollup."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0]) / 1024
    return fields["Rss"], fields["Pss"]


def measure_ttft(model: str, num_requests: int, max_tokens: int, threads: int | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        server, url = _start_server(model, Path(folder), threads)
        time.sleep(5.0)  # the server's spare worker starts after its model loads: not during the requests
        try:
            sdk = Session(RuntimeConfig(device="cpu", num_threads=threads)).load_model(model)
            options = {"max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True}
            sdk_ttft, sdk_gap, http_ttft, http_gap = [], [], [], []
            with httpx.Client(base_url=url, timeout=120) as client:
                for _ in range(num_requests):
                    ttft, gap = _sdk_stream(sdk, options)
                    sdk_ttft.append(ttft)
                    sdk_gap.append(gap)
                    ttft, gap = _http_stream(client, options)
                    http_ttft.append(ttft)
                    http_gap.append(gap)
        finally:
            server.terminate()
            server.wait(60)
    s_ttft, h_ttft = statistics.median(sdk_ttft), statistics.median(http_ttft)
    s_gap, h_gap = statistics.median(sdk_gap), statistics.median(http_gap)
    print(f"TTFT, {num_requests} streamed greedy requests each (median):")
    print(f"  in-process SDK {s_ttft * 1000:8.1f} ms   HTTP {h_ttft * 1000:8.1f} ms   "
          f"ratio {h_ttft / s_ttft:.2f}x (target <= 1.10x)")
    print(f"  gap between tokens: SDK {s_gap * 1000:.2f} ms   HTTP {h_gap * 1000:.2f} ms   "
          f"added {(h_gap - s_gap) * 1000:+.2f} ms per token (target <= 1 ms)")


def _sdk_stream(model, options: dict) -> tuple[float, float]:
    started = time.perf_counter()
    times = [time.perf_counter() for _ in model.stream(PROMPT, raw=True, **options)]
    return times[0] - started, (times[-1] - times[0]) / max(len(times) - 1, 1)


def _http_stream(client: httpx.Client, options: dict) -> tuple[float, float]:
    body = {"model": "m", "prompt": PROMPT, "stream": True, **options}
    started = time.perf_counter()
    times = []
    with client.stream("POST", "/v1/completions", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"text":""' not in line.replace(" ", ""):
                times.append(time.perf_counter())
    return times[0] - started, (times[-1] - times[0]) / max(len(times) - 1, 1)


def _start_server(model: str, folder: Path, threads: int | None) -> tuple[subprocess.Popen, str]:
    port = 8700 + int(time.time()) % 200
    config = {"runtime": {"device": "cpu", "num_threads": threads or "auto"}, "serving": {"port": port, "models": [{"name": "m", "source": model}]}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    server = subprocess.Popen([sys.executable, "-m", "mcp.commands.cli", "serve", "--config",
                               str(folder / "config.yaml")], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/ready").status_code == 200:
                return server, url
        except httpx.TransportError:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit("the server did not become ready in 2 minutes")


if __name__ == "__main__":
    main()
