"""Quality of each runtime precision against the fp32 reference, on a fixed text set.

For SmolLM2-135M-Instruct Q4_1: teacher-forced top-1 agreement and mean KL(fp32 || candidate)
over every position of `mcp.ops.quality.TEXTS` (> 1,000 positions), for bf16 (dense), the auto
plan as it decodes (the native kernels: exact int4 and Q8_0 weights, fp32 sums), as it
prefills (dense GEMMs over the int4 values), int4 on PyTorch's int4pack kernel, and int8
weight-only on its decode kernel. The fp32 reference is the engine that matches
transformers bit for bit.

    .venv/bin/python benchmarks/precision_quality.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.modelfile import catalog
from mcp.modelfile.compiler import compile_model
from mcp.modelfile.reader import open_model
from mcp.ops.quality import agreement, score_all, token_sequences

CANDIDATES = (  # label, compile precision, runtime precision, phase whose kernels run, native kernels
    ("bf16 dense", "source", "bf16", None, True),
    ("auto plan, decode path (native mcp-int4/int8)", "auto", "auto", "decode", True),
    ("auto plan, prefill path (dense GEMM of int4)", "auto", "auto", "prefill", True),
    ("int4 on PyTorch's int4pack, bf16 act", "auto", "auto", "decode", False),
    ("int8 (decode kernel: int8pack, bf16 act)", "source", "int8", "decode", False),
)


def load(path: Path, precision: str, native_kernels: bool = True) -> NativeEngine:
    with open_model(path) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision=precision, native_kernels=native_kernels))


def main() -> None:
    torch.set_num_threads(2)
    gguf = catalog.fetch_source(catalog.DEFAULT_MODEL)
    folder = Path(tempfile.mkdtemp())
    files = {p: folder / f"{p}.mcp" for p in ("source", "auto")}
    for precision, path in files.items():
        compile_model(gguf, path, precision=precision)
    reference_engine = load(files["source"], "fp32")
    sequences = token_sequences(reference_engine)
    reference = score_all(reference_engine, sequences)
    print(f"hardware {reference_engine.hardware.describe()}")
    print(f"{'precision':<46} {'positions':>9} {'top-1 agree':>11} {'mean KL (nats)':>14}")
    for label, compiled, runtime, phase, native in CANDIDATES:
        engine = load(files[compiled], runtime, native)
        result = agreement(reference, score_all(engine, sequences, phase))
        print(f"{label:<46} {result.positions:>9} {result.top1:>11.2%} {result.mean_kl:>14.5f}  ({engine.precision})")


if __name__ == "__main__":
    main()
