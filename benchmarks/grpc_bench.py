"""gRPC serving figures: hot swap through LoadModel; InferStream TTFT against the SDK's and HTTP's.

    .venv/bin/python benchmarks/grpc_bench.py [MODEL] [--swaps 5] [--requests 10] [--threads 1]

MODEL is a .mcp path or a catalog name (default smollm2-135m-instruct). Prints numbers; not a test.
Starts a real ``mcp2026 serve`` with ``serving.grpc.enabled`` on 127.0.0.1, then:

1. load-to-ready: ``LoadModel`` of a new version of the served model, as an admin client does:
   the server's own load-to-ready figure, and the RPC's wall time as the client sees it.
2. TTFT and the gap between tokens: the same greedy prompt, streamed, in turn from a model
   loaded in this process (``model.stream``), through ``InferStream``, and through the same
   server's HTTP API (``/v1/completions``), one request at a time, so that all three see the
   same machine load.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import httpx
import yaml

from mcp.config.runtime import RuntimeConfig
from mcp.runtime.session import Session
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc

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
    with tempfile.TemporaryDirectory() as folder:
        server, stub, url = _start_server(args.model, Path(folder), args.threads)
        try:
            measure_swaps(stub, args.model, args.swaps)
            measure_ttft(stub, url, args.model, args.requests, args.max_tokens, args.threads)
        finally:
            server.terminate()
            server.wait(60)


def measure_swaps(stub: pb_grpc.InferenceServiceStub, model: str, num_swaps: int) -> None:
    readies, walls = [], []
    for version in range(2, num_swaps + 2):
        started = time.perf_counter()
        loaded = stub.LoadModel(pb.LoadModelRequest(name="m", source=model, version=str(version))).model
        walls.append(time.perf_counter() - started)
        readies.append(loaded.load_to_ready_s)
    print(f"hot swap of {model} through LoadModel, {num_swaps} swaps (median, min-max):")
    for label, values in (("load to ready (server)", readies), ("LoadModel RPC (client)", walls)):
        median = statistics.median(values)
        print(f"  {label:24} {median * 1000:8.1f} ms  ({min(values) * 1000:.1f}-{max(values) * 1000:.1f})"
              f"  = {median / TARGET_S:.2f}x the 100 ms target")


def measure_ttft(stub: pb_grpc.InferenceServiceStub, url: str, model: str, num_requests: int, max_tokens: int,
                 threads: int | None) -> None:
    readers = {"in-process SDK": None, "gRPC": lambda: _grpc_stream(stub, max_tokens),
               "HTTP": lambda: _http_stream(url, max_tokens)}
    ttfts: dict[str, list[float]] = {name: [] for name in readers}
    gaps: dict[str, list[float]] = {name: [] for name in readers}
    with Session(RuntimeConfig(device="cpu", num_threads=threads)) as session:
        sdk = session.load_model(model)
        readers["in-process SDK"] = lambda: _sdk_stream(sdk, max_tokens)
        for _ in range(num_requests):
            for name, read in readers.items():
                ttft, gap = read()
                ttfts[name].append(ttft)
                gaps[name].append(gap)
    sdk_ttft, sdk_gap = statistics.median(ttfts["in-process SDK"]), statistics.median(gaps["in-process SDK"])
    print(f"{num_requests} streamed greedy requests each (median): TTFT, ratio to the SDK's; gap between tokens")
    for name in readers:
        ttft, gap = statistics.median(ttfts[name]), statistics.median(gaps[name])
        print(f"  {name:15} TTFT {ttft * 1000:7.1f} ms  {ttft / sdk_ttft:.2f}x   gap {gap * 1000:6.2f} ms "
              f"({(gap - sdk_gap) * 1000:+.2f} ms)")


def _sdk_stream(model, max_tokens: int) -> tuple[float, float]:
    started = time.perf_counter()
    times = [time.perf_counter() for step in model.stream(PROMPT, raw=True, max_tokens=max_tokens,
                                                           temperature=0.0, ignore_eos=True)]
    return times[0] - started, (times[-1] - times[0]) / max(len(times) - 1, 1)


def _grpc_stream(stub: pb_grpc.InferenceServiceStub, max_tokens: int) -> tuple[float, float]:
    request = pb.InferRequest(prompt=PROMPT, sampling=pb.SamplingParams(max_tokens=max_tokens, temperature=0.0,
                                                                          ignore_eos=True))
    started = time.perf_counter()
    times = [time.perf_counter() for message in stub.InferStream(request) if message.text]
    return times[0] - started, (times[-1] - times[0]) / max(len(times) - 1, 1)


def _http_stream(url: str, max_tokens: int) -> tuple[float, float]:
    body = {"model": "m", "prompt": PROMPT, "stream": True, "max_tokens": max_tokens, "temperature": 0.0,
            "ignore_eos": True}
    started = time.perf_counter()
    times = []
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"text":""' not in line.replace(" ", ""):
                times.append(time.perf_counter())
    return times[0] - started, (times[-1] - times[0]) / max(len(times) - 1, 1)


def _start_server(model: str, folder: Path,
                  threads: int | None) -> tuple[subprocess.Popen, pb_grpc.InferenceServiceStub, str]:
    http_port, grpc_port = _free_port(), _free_port()
    config = {"runtime": {"device": "cpu", "num_threads": threads or "auto"},
              "serving": {"port": http_port, "models": [{"name": "m", "source": model, "version": "1"}],
                          "grpc": {"enabled": True, "port": grpc_port}}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    server = subprocess.Popen([sys.executable, "-m", "mcp.commands.cli", "serve", "--config",
                               str(folder / "config.yaml")], stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=120)
    except grpc.FutureTimeoutError:
        server.terminate()
        raise SystemExit("the server's gRPC port did not open in 2 minutes") from None
    return server, pb_grpc.InferenceServiceStub(channel), f"http://127.0.0.1:{http_port}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    main()
