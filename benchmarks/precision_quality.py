"""Quality of each runtime precision against the fp32 reference, on a fixed text set.

For SmolLM2-135M-Instruct Q4_1: teacher-forced top-1 agreement and mean KL(fp32 || candidate)
over every position of `mcp.ops.quality.TEXTS` (> 1,000 positions), for bf16 (dense), the auto
plan as it decodes (the native kernels with int8 dots: activations quantized to int8 blocks
of 32; with int8x2 dots: two int8 digits per block, 15 bits; and with exact dots, the
default: exact int4 and Q8_0 weights, fp32 sums), as it
prefills (dense GEMMs over the int4 values), int4 on PyTorch's int4pack kernel, and int8
weight-only on its decode kernel. The auto plan is also scored as a served request decodes:
one token per native step over the paged KV cache, in fp32 and in halves
(``scheduler.kv_cache_dtype: f16``). The fp32 reference is the engine that matches
transformers bit for bit. With llama-cpp-python installed (`make test` installs it), llama.cpp
on the same GGUF is scored on the same token ids too, as the peer: a whole sequence in one
batch (its prompt path) and one token per eval (its decode path).

    .venv/bin/python benchmarks/precision_quality.py [--only LABEL_PART ...] [--no-llamacpp]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from mcp.compiler import catalog
from mcp.compiler.compiler import compile_model
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.models.llama_step import unsupported
from mcp.engine.runner import ModelRunner, StepChunk, allocate_storage
from mcp.modelfile.reader import open_model
from mcp.ops.quality import agreement, score_all, token_sequences

CANDIDATES = (  # label, compile precision, runtime precision, phase whose kernels run, native kernels, dots
    ("bf16 dense", "source", "bf16", None, True, "auto"),
    ("auto plan, decode path (native, int8 dots)", "auto", "auto", "decode", True, "int8"),
    ("auto plan, decode path (native, int8x2 dots)", "auto", "auto", "decode", True, "int8x2"),
    ("auto plan, decode path (native, exact dots)", "auto", "auto", "decode", True, "exact"),
    ("auto plan, prefill path (dense GEMM of int4)", "auto", "auto", "prefill", True, "auto"),
    ("int4 on PyTorch's int4pack, bf16 act", "auto", "auto", "decode", False, "auto"),
    ("int8 (decode kernel: int8pack, bf16 act)", "source", "int8", "decode", False, "auto"),
)


STEPWISE = (  # label, KV cache dtype: the auto plan, token by token through the native step
    ("auto plan, native step per token, fp32 KV", torch.float32),
    ("auto plan, native step per token, f16 KV", torch.float16),
)
BLOCK = 16


def load(path: Path, precision: str, native_kernels: bool = True, decode_dots: str = "auto") -> NativeEngine:
    options = EngineOptions(device="cpu", precision=precision, native_kernels=native_kernels, decode_dots=decode_dots)
    with open_model(path) as model_file:
        return NativeEngine(model_file, options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="LABEL_PART",
                        help="score only the candidates whose label contains this (repeatable)")
    parser.add_argument("--no-llamacpp", action="store_true", help="do not score llama.cpp")
    args = parser.parse_args()
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
    for label, compiled, runtime, phase, native, dots in CANDIDATES:
        if args.only and not any(part in label for part in args.only):
            continue
        engine = load(files[compiled], runtime, native, dots)
        result = agreement(reference, score_all(engine, sequences, phase))
        print(f"{label:<46} {result.positions:>9} {result.top1:>11.2%} {result.mean_kl:>14.5f}  ({engine.precision})")
    for label, kv_dtype in STEPWISE:
        if args.only and not any(part in label for part in args.only):
            continue
        engine = load(files["auto"], "auto")
        result = agreement(reference, [score_stepwise(engine, ids, kv_dtype) for ids in sequences])
        print(f"{label:<46} {result.positions:>9} {result.top1:>11.2%} {result.mean_kl:>14.5f}  ({engine.precision})")
    for label, scores in ([] if args.no_llamacpp else llamacpp_scores(gguf, sequences)):
        result = agreement(reference, scores)
        print(f"{label:<46} {result.positions:>9} {result.top1:>11.2%} {result.mean_kl:>14.5f}  (the peer)")


def score_stepwise(engine: NativeEngine, ids: list[int], kv_dtype: torch.dtype) -> torch.Tensor:
    """Teacher-forced logits [len(ids), vocab], one token per step through the native step
    over a paged cache of ``kv_dtype``, as a served request decodes (its prompt aside)."""
    arch = engine.model.arch
    blocks = -(-len(ids) // BLOCK)
    budget = blocks * PagedKVStorage.bytes_per_block(arch.num_layers, BLOCK, arch.num_kv_heads, arch.head_dim,
                                                     kv_dtype)
    runner = ModelRunner(engine.model, allocate_storage(engine.model, budget, BLOCK, kv_dtype), native_step=True,
                         decode_max_rows=engine.plan.decode_max_rows)
    if runner.native_step is None:
        raise SystemExit(f"the native step cannot run here: {unsupported(engine.model, runner.storage)}")
    table = list(range(blocks))
    return torch.cat([runner.execute([StepChunk([token], position, table, True)]) for position, token in enumerate(ids)])


def llamacpp_scores(gguf: Path, sequences: list[list[int]]):
    """llama.cpp's teacher-forced logits, by batch and token by token; nothing without it."""
    try:
        from mcp.backends.base import Prompt
        from mcp.backends.llamacpp import LlamaCppBackend
        import llama_cpp
    except ImportError:
        print("(llama.cpp not scored: pip install llama-cpp-python, or `make test`)")
        return
    backend = LlamaCppBackend(gguf, threads=2)
    backend.load()
    version = f"llama-cpp-python {llama_cpp.__version__}"
    try:
        yield f"{version}, whole sequence per eval", [
            backend.score(Prompt(token_ids=tuple(ids), text=""), 0).logits for ids in sequences]
        yield f"{version}, one token per eval", [token_by_token(backend.llm, ids) for ids in sequences]
    finally:
        backend.unload()


def token_by_token(llm, ids: list[int]) -> torch.Tensor:
    llm.reset()
    for token in ids:
        llm.eval([token])
    return torch.tensor(llm.scores[: len(ids)], dtype=torch.float32)


if __name__ == "__main__":
    main()
