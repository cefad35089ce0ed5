"""gRPC serving figures: hot swap through LoadModel, and InferStream TTFT against the in-process SDK's.

    .venv/bin/python benchmarks/grpc_bench.py [MODEL] [--swaps 5] [--requests 10] [--threads 1]

MODEL is a .mcp path or a catalog name (default smollm2-135m-instruct). Prints numbers; not a test.
Starts a real ``mcp2026 serve`` with ``serving.grpc.enabled`` on 127.0.0.1, then:

1. load-to-ready: ``LoadModel`` of a new version of the served model, as an admin client does:
   the server's own load-to-ready figure, and the RPC's wall time as the client sees it.
2. TTFT and the gap between tokens: the same greedy prompt, streamed, alternately through
   ``InferStream`` and from a model loaded in this process (``model.stream``), one at a time.
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
import yaml

from mcp.runtime.config import RuntimeConfig
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
        server, stub = _start_server(args.model, Path(folder), args.threads)
        try:
            measure_swaps(stub, args.model, args.swaps)
            measure_ttft(stub, args.model, args.requests, args.max_tokens, args.threads)
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


def measure_ttft(stub: pb_grpc.InferenceServiceStub, model: str, num_requests: int, max_tokens: int,
                 threads: int | None) -> None:
    with Session(RuntimeConfig(device="cpu", num_threads=threads)) as session:
        sdk = session.load_model(model)
        sdk_ttft, sdk_gap, grpc_ttft, grpc_gap = [], [], [], []
        for _ in range(num_requests):
            ttft, gap = _sdk_stream(sdk, max_tokens)
            sdk_ttft.append(ttft)
            sdk_gap.append(gap)
            ttft, gap = _grpc_stream(stub, max_tokens)
            grpc_ttft.append(ttft)
            grpc_gap.append(gap)
    s_ttft, g_ttft = statistics.median(sdk_ttft), statistics.median(grpc_ttft)
    s_gap, g_gap = statistics.median(sdk_gap), statistics.median(grpc_gap)
    print(f"TTFT, {num_requests} streamed greedy requests each (median):")
    print(f"  in-process SDK {s_ttft * 1000:8.1f} ms   gRPC {g_ttft * 1000:8.1f} ms   ratio {g_ttft / s_ttft:.2f}x")
    print(f"  gap between tokens: SDK {s_gap * 1000:.2f} ms   gRPC {g_gap * 1000:.2f} ms   "
          f"added {(g_gap - s_gap) * 1000:+.2f} ms per token")


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


def _start_server(model: str, folder: Path, threads: int | None) -> tuple[subprocess.Popen, pb_grpc.InferenceServiceStub]:
    http_port, grpc_port = _free_port(), _free_port()
    config = {"runtime": {"device": "cpu", "num_threads": threads or "auto"},
              "serving": {"port": http_port, "models": [{"name": "m", "source": model, "version": "1"}],
                          "grpc": {"enabled": True, "port": grpc_port}}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    server = subprocess.Popen([sys.executable, "-m", "mcp.runtime.cli", "serve", "--config",
                               str(folder / "config.yaml")], stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=120)
    except grpc.FutureTimeoutError:
        server.terminate()
        raise SystemExit("the server's gRPC port did not open in 2 minutes") from None
    return server, pb_grpc.InferenceServiceStub(channel)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    main()
