"""Latency the gateway adds per request: the same requests sent straight to an upstream
``mcp2026 serve`` and through an ``mcp2026 gateway`` in front of it, in one run.

Requests alternate (direct, gateway, direct, ...) one at a time, so both paths see the same
machine load; each is timed from send to the last byte of the answer. Prints p50/p99 of both
paths, their difference (the added latency) and their ratio, for plain and streamed requests.
The upstream serves a tiny random-weight model (one token per request), so the upstream's own
time is small and the gateway's share shows; start your own with --upstream URL instead.

    .venv/bin/python benchmarks/gateway_overhead.py [--requests 400] [--upstream URL --model ID]
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

import httpx
import yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="per path and kind (default 400)")
    parser.add_argument("--upstream", help="an OpenAI-compatible server to use instead of starting one")
    parser.add_argument("--model", default="tiny:1", help="the model id the upstream serves")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        processes = []
        try:
            upstream = args.upstream or _start_upstream(Path(folder), processes)
            gateway = _start_gateway(Path(folder), upstream, args.model, processes)
            for stream in (False, True):
                _report(stream, *_measure(upstream, gateway, args.model, args.requests, stream))
        finally:
            for process in processes:
                process.terminate()
                process.wait(30)


def _measure(upstream: str, gateway: str, model: str, num: int, stream: bool) -> tuple[list, list]:
    direct, through = [], []
    body = {"model": model, "prompt": "Hello", "max_tokens": 1, "stream": stream}
    with httpx.Client(timeout=60) as client:
        for i in range(num + 20):  # the first 20 of each warm up connections and caches
            for url, times in ((upstream, direct), (gateway, through)):
                started = time.perf_counter()
                with client.stream("POST", url + "/v1/completions", json=body) as response:
                    response.read()
                    assert response.status_code == 200, response.text
                if i >= 20:
                    times.append(time.perf_counter() - started)
    return direct, through


def _report(stream: bool, direct: list[float], through: list[float]) -> None:
    print(f"\n{'streamed' if stream else 'plain'} /v1/completions, {len(direct)} requests per path, max_tokens 1")
    print("| path | p50 ms | p99 ms |\n|---|---|---|")
    for name, times in (("direct", direct), ("gateway", through)):
        print(f"| {name} | {_pct(times, 50):.2f} | {_pct(times, 99):.2f} |")
    for q in (50, 99):
        added, ratio = _pct(through, q) - _pct(direct, q), _pct(through, q) / _pct(direct, q)
        print(f"p{q}: gateway adds {added:.2f} ms ({ratio:.2f}x direct)")
    added = [t - d for d, t in zip(direct, through)]
    print(f"paired difference: p50 {_pct(added, 50):.2f} ms, p99 {_pct(added, 99):.2f} ms")


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000 if q < 100 else max(values) * 1000


def _start_upstream(folder: Path, processes: list) -> str:
    model = _tiny_model(folder)
    port = _free_port()
    config = folder / "serve.yaml"
    config.write_text(yaml.safe_dump({"serving": {"host": "127.0.0.1", "port": port,
                                                  "models": [{"name": "tiny", "source": str(model), "version": "1"}]}}))
    return _spawn(["serve", "--config", str(config)], port, "/ready", folder / "serve.log", processes)


def _start_gateway(folder: Path, upstream: str, model: str, processes: list) -> str:
    port = _free_port()
    config, rules = folder / "gateway.yaml", folder / "routes.yaml"
    config.write_text(yaml.safe_dump({"gateway": {"port": port}, "pools": {"p": {"members": [{"name": "u", "url": upstream}]}}}))
    rules.write_text(yaml.safe_dump({"routes": [{"name": "tiny", "conditions": {"tenant": "nobody"},
                                                 "backend": {"model_id": model, "instance_pool": "p"}}],
                                     "default": {"backend": {"model_id": model, "instance_pool": "p"}}}))
    return _spawn(["gateway", "--config", str(config), "--rules", str(rules)], port, "/health",
                  folder / "gateway.log", processes)


def _spawn(command: list[str], port: int, ready: str, log: Path, processes: list) -> str:
    process = subprocess.Popen([sys.executable, "-m", "mcp.commands.cli", *command], stdout=log.open("wb"),
                               stderr=subprocess.STDOUT)
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(f"{command[0]} exited:\n{log.read_text()}")
        try:
            if httpx.get(url + ready, timeout=2).status_code == 200:
                return url
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{command[0]} not ready in 60 s:\n{log.read_text()}")


def _tiny_model(folder: Path) -> Path:
    """A 2-layer random Llama with the default model's tokenizer, compiled to .mcp (as the tests build it)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mcp.compiler import catalog
    from mcp.compiler.compiler import compile_model

    gguf = catalog.fetch_source(catalog.DEFAULT_MODEL)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder / "tiny")
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(folder / "tiny")
    compile_model(folder / "tiny", folder / "tiny.mcp", name="tiny")
    return folder / "tiny.mcp"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    main()
