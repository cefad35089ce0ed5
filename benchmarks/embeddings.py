"""Embeddings per second: all-MiniLM-L6-v2 through the SDK's ``model.embed`` (the encoder's loop,
batched by the scheduler's limits) against sentence-transformers' ``encode`` on the same texts,
the same threads, taking turns round by round. Numbers, not a test.

    .venv/bin/python benchmarks/embeddings.py [--rounds 5] [--texts 256] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from mcp.compiler import catalog
from mcp.config.runtime import config_from_dict
from mcp.runtime.session import Session

SENTENCES = ["The capital of France is Paris.", "今天天气很好，我们去公园散步吧。",
             "def add(a, b):\n    return a + b", "A man is playing a guitar on the street at night."]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = [f"{SENTENCES[i % len(SENTENCES)]} ({i})" for i in range(args.texts)]
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(catalog.fetch_source("all-minilm-l6-v2")), device="cpu")
    config = {"runtime": {"device": "cpu", "num_threads": args.threads}}
    with Session(config_from_dict(config)) as session:
        model = session.load_model("all-minilm-l6-v2")
        runs = {"ours": lambda: model.embed(texts), "sentence-transformers": lambda: reference.encode(texts)}
        rates: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                started = time.perf_counter()
                run()
                rates[name].append(len(texts) / (time.perf_counter() - started))
    for name, values in rates.items():
        print(f"{name:22} {statistics.median(values):8.1f} texts/s (min {min(values):.1f}, max {max(values):.1f})")


if __name__ == "__main__":
    main()
