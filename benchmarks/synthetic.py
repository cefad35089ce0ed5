"""Ours beside llama.cpp at the sizes users run: random-weight GGUFs of real shapes, in one run.

Writes Llama GGUFs of Llama-3.2-1B's and -3B's shapes with random weights (F16, the ``gguf``
package, SmolLM2's tokenizer), quantizes them with llama.cpp's own quantizer to Q4_0, Q4_K_M
and Q8_0 (cached in --workdir), compiles each with ``mcp2026 compile`` (default settings),
then measures ours and llama.cpp (llama-cpp-python) on the same file, each engine in a fresh
process, taking turns (order shuffled) over --rounds rounds; the default model's figures
come in the same report. Prints, per file, medians [min-max] over the rounds, ratios to
llama.cpp and issue 30's targets judged met/MISSED. See benchmarks/README.md.

    .venv/bin/python benchmarks/synthetic.py [--shapes default,1b,3b] [--quants q4_0,q4_k_m,q8_0]
        [--rounds 3] [--threads 2] [--engines ours,llamacpp] [--workdir DIR] [--json FILE] [--profile]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from enginebench import report, runinfo, synthgguf, synthreport  # noqa: E402
from enginebench.spec import Settings, WorkerSpec, build_prompts  # noqa: E402
from enginebench.turns import measure_in_turns  # noqa: E402
from enginebench.worker import run_bandwidth, run_measured  # noqa: E402

PACKAGES = ("mcp2026", "torch", "llama-cpp-python", "gguf", "numpy")
WORKER_TIMEOUT_S = 3600
ENGINES = ("ours", "lean", "llamacpp")
FULL = Settings(runs=1, prompt_tokens=512, decode_tokens=64, batch_sizes=(16,), batch_tokens=32, bandwidth_mib=1024)
QUICK = Settings(runs=1, prompt_tokens=128, decode_tokens=16, batch_sizes=(16,), batch_tokens=8, bandwidth_mib=256)


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """One file both engines run: the GGUF llama.cpp loads and the .mcp ours compiled from it."""

    label: str  # "1b q4_k_m", or "default"
    title: str
    gguf: Path
    mcp: Path
    targets: str  # the issue-30 target set: "1b", "3b" or "default"
    made: str  # how the files were made in this run


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    command = runinfo.command_line(__file__, argv)
    settings = QUICK if args.quick else FULL
    args.workdir.mkdir(parents=True, exist_ok=True)
    files = [_prepare(args, shape, quant) for shape, quant in _wanted(args)]
    base = WorkerSpec(engine="", mcp_path=str(files[0].mcp), gguf_path=str(files[0].gguf), threads=args.threads,
                      settings=settings, options={"decode_dots": args.decode_dots})
    bandwidth = {} if args.profile else run_bandwidth(base)
    _print(_header(command, settings, args, bandwidth))
    measured = {}
    for model_file in files:  # each file's block printed as soon as it is measured: a long run shows its progress
        spec = _spec(model_file, base)
        if args.profile:
            _print(_profile(model_file, spec))
            continue
        results, others = measure_in_turns({e: dataclasses.replace(spec, engine=e) for e in args.engines},
                                           args.rounds, WORKER_TIMEOUT_S)
        measured[model_file.label] = {"gguf": str(model_file.gguf), "mcp": str(model_file.mcp), "results": results,
                                      "others_share": others, "gguf_tensor_bytes": synthgguf.tensor_bytes(model_file.gguf)}
        _print(["", *_file_block(model_file, spec, settings, results, others, bandwidth, measured)])
        if args.json:  # after each file, so that a run cut short keeps what it measured
            _save_json(args.json, command, settings, bandwidth, measured)
    if measured:
        _print(["", "ours / llama.cpp, medians (> 1 = ours better):",
                *(synthreport.summary_line(label, m["results"], settings) for label, m in measured.items()),
                *_notes(measured, settings)])


def _print(lines: list[str]) -> None:
    print("\n".join(lines), flush=True)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=_choices(("default", *synthgguf.SHAPES)),
                        help="comma-separated: default (the default model, SmolLM2-135M Q4_1, its own file), "
                             f"{', '.join(synthgguf.SHAPES)} (default: default,1b,3b; --profile: 1b)")
    parser.add_argument("--quants", type=_choices(tuple(synthgguf.QUANTS)), default=list(synthgguf.QUANTS),
                        help="comma-separated llama.cpp file types for the synthetic shapes (default all: "
                             f"{','.join(synthgguf.QUANTS)})")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each engine runs once a round (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every engine and the quantizer (default 2)")
    parser.add_argument("--engines", type=_choices(ENGINES), default=["ours", "llamacpp"],
                        help="comma-separated subset of ours,lean,llamacpp (default ours,llamacpp)")
    parser.add_argument("--workdir", type=Path, default=HERE.parent / ".cache" / "synthetic",
                        help="where the GGUFs and .mcp files are kept (default .cache/synthetic)")
    parser.add_argument("--keep-f16", action="store_true", help="keep each shape's F16 source after quantizing")
    parser.add_argument("--reuse-compiled", action="store_true",
                        help="reuse a .mcp in --workdir newer than its GGUF instead of compiling it again")
    parser.add_argument("--quick", action="store_true", help="short prompts and outputs: a smoke run")
    parser.add_argument("--profile", action="store_true",
                        help="instead of the benchmark: where one decode token's time goes in ours, per file")
    parser.add_argument("--json", help="also write every raw sample to this file")
    parser.add_argument("--decode-dots", default="auto", choices=("auto", "exact", "int8", "int8x2"),
                        help="ours: runtime.decode_dots (default auto: int8x2 where the kernels have SIMD; "
                             "exact: the GGUF blocks read as stored, fp32 products)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.threads < 1:
        parser.error("--rounds and --threads must be at least 1")
    if not args.profile and "llamacpp" not in args.engines:
        parser.error("--engines must include llamacpp: every figure is judged against it")
    args.shapes = args.shapes or (["1b"] if args.profile else ["default", "1b", "3b"])
    return args


def _choices(known: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = sorted(set(names) - set(known))
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown) or '(none)'}; choose from {','.join(known)}")
        return list(dict.fromkeys(names))

    return parse


def _wanted(args) -> list[tuple[str, str | None]]:
    return [(shape, None) if shape == "default" else (shape, quant) for shape in args.shapes
            for quant in ([None] if shape == "default" else args.quants)]


def _prepare(args, shape_name: str, quant: str | None) -> ModelFile:
    """The GGUF (cached, or written and quantized now) and the .mcp this checkout compiles from it."""
    from mcp.compiler import catalog

    source = catalog.fetch_source(catalog.DEFAULT_MODEL)
    if shape_name == "default":
        gguf, made, title, targets = source, "the catalog's file", f"default model: {source.name}", "default"
    else:
        shape = synthgguf.SHAPES[shape_name]
        print(f"[synthetic] {shape_name} {quant}: the GGUF", file=sys.stderr, flush=True)
        gguf, made = synthgguf.quantized_file(shape, quant, source, args.workdir, args.threads, args.keep_f16)
        title, targets = f"{shape.title}, {quant.upper()} (random weights): {gguf.name}", shape.targets
    mcp = args.workdir / f"{gguf.stem}.mcp"
    if args.reuse_compiled and mcp.exists() and mcp.stat().st_mtime > gguf.stat().st_mtime:
        compiled = "reused from --workdir (--reuse-compiled)"
    else:
        compiled = _compile(gguf, mcp)
    label = shape_name if quant is None else f"{shape_name} {quant}"
    return ModelFile(label, title, gguf, mcp, targets, f"GGUF: {made}; .mcp {compiled}")


def _compile(gguf: Path, mcp: Path) -> str:
    """``mcp2026 compile`` with its default settings, as a user would run it."""
    cli = Path(sys.executable).with_name("mcp2026")
    cli = str(cli) if cli.exists() else shutil.which("mcp2026")
    if cli is None:
        raise SystemExit("mcp2026 is not installed in this environment: make install")
    print(f"[synthetic] mcp2026 compile {gguf.name}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    done = subprocess.run([cli, "compile", str(gguf), "-o", str(mcp), "--name", gguf.stem], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"mcp2026 compile {gguf} failed:\n{done.stderr[-2000:]}")
    return f"compiled by this checkout in {time.perf_counter() - started:.1f} s (mcp2026 compile, default settings)"


def _spec(model_file: ModelFile, base: WorkerSpec) -> WorkerSpec:
    """The worker spec for this file, with the prompts built by its tokenizer (the same text for both engines)."""
    from mcp.engine.tokenizer import Tokenizer
    from mcp.modelfile.reader import open_model

    with open_model(model_file.mcp) as opened:
        pp_text, chat_text = build_prompts(Tokenizer.from_spec(opened.header.tokenizer), base.settings.prompt_tokens)
    return dataclasses.replace(base, mcp_path=str(model_file.mcp), gguf_path=str(model_file.gguf),
                               pp_text=pp_text, chat_text=chat_text)


def _header(command: str, settings: Settings, args, bandwidth: dict) -> list[str]:
    mode = "profile of a batch-1 decode token" if args.profile else (
        f"median [min-max] over {args.rounds} round(s), engines in turn (order shuffled per round), each in a fresh "
        "process")
    lines = [f"Synthetic-model benchmark, {args.threads} threads each, {mode}" + (" (--quick)" if args.quick else ""),
             f"command: {command}",
             f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
             f"cpu: {runinfo.cpu_model()}, {len(os.sched_getaffinity(0))} cores usable",
             "versions: " + ", ".join(f"{p} {runinfo.version(p)}" for p in PACKAGES) + f", git {runinfo.git_revision()}",
             f"ours: runtime.decode_dots {args.decode_dots}"]
    if not args.profile:
        lines.append(f"memory read bandwidth: {runinfo.bandwidth_line(bandwidth)}")
        lines.append(f"each round: {settings.decode_tokens} tokens greedy decode after a short prompt, a "
                     f"~{settings.prompt_tokens}-token raw prompt, the chat prompt's first token, "
                     f"{max(settings.batch_sizes)} sequences x {settings.batch_tokens} tokens, one warm load "
                     "(each after one unrecorded warm-up), one cold load")
    if args.rounds == 1 and not args.profile:
        lines.append("one round: single samples, no ranges; on a shared machine these figures are noisy")
    return lines


def _file_block(model_file: ModelFile, spec: WorkerSpec, settings: Settings, results: dict, others: dict,
                bandwidth: dict, measured: dict) -> list[str]:
    file_bytes = measured[model_file.label]["gguf_tensor_bytes"]
    pp_tokens = next((r["info"].get("pp_tokens") for r in results.values() if "info" in r), settings.prompt_tokens)
    rss_target = runinfo.rss_target_mib(spec.mcp_path, settings, pp_tokens, 1.1) if "lean" in results else None
    seen = ", ".join(f"{report.TITLES[e]} {r['info'].get('pp_tokens')}/{r['info'].get('chat_tokens')}"
                     for e, r in results.items() if "info" in r)
    above = [f"files: {model_file.gguf.name} ({model_file.gguf.stat().st_size / 1e6:.0f} MB, tensor data "
             f"{file_bytes / 1e6:.0f} MB), {model_file.mcp.name} ({model_file.mcp.stat().st_size / 1e6:.0f} MB); "
             f"{model_file.made}",
             f"tokens seen (pp/chat): {seen}", runinfo.others_line(others)]
    return synthreport.file_block(model_file.title, above, settings, results, bandwidth.get("torch_gbps"), file_bytes,
                                  model_file.targets, rss_target)


def _profile(model_file: ModelFile, spec: WorkerSpec) -> list[str]:
    ours, _ = run_measured(dataclasses.replace(spec, engine="profile"), WORKER_TIMEOUT_S)
    llama, _ = run_measured(dataclasses.replace(spec, engine="profile", options={"peer": "llamacpp"}), WORKER_TIMEOUT_S)
    return ["", *synthreport.profile_lines(model_file.title, ours, llama)]


def _notes(measured: dict, settings: Settings) -> list[str]:
    lines = ["", "notes:",
             "- bound = memory read bandwidth / the GGUF's tensor bytes (what one batch-1 step reads: every matrix "
             "once, the tied embedding as the output head), the same for both engines; 'weights held' is each "
             "engine's own: ours, the loaded module's tensors; llama.cpp, llama_model_size()",
             f"- the {max(settings.batch_sizes)}-sequence target is against llama.cpp's batch-1 figure (issue 30); "
             "the table's ratio compares with llama.cpp's own batch"]
    methods = {}
    for label, entry in measured.items():
        for engine, result in entry["results"].items():
            methods.update({(engine, figure): how for figure, how in result.get("methods", {}).items()})
            lines += [f"- {label}, {report.TITLES[engine]}: {note}" for note in result.get("notes", [])]
    lines.append("how each engine is timed:")
    lines += [f"  {report.TITLES[engine]:<12} {figure:<6} {how}" for (engine, figure), how in methods.items()]
    return lines


def _save_json(path: str, command: str, settings: Settings, bandwidth: dict, measured: dict) -> None:
    Path(path).write_text(json.dumps({"command": command, "settings": dataclasses.asdict(settings),
                                      "bandwidth": bandwidth, "files": measured}, indent=1))


if __name__ == "__main__":
    main()
