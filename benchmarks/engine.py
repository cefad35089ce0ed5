"""Our engine side by side with llama.cpp and Hugging Face transformers, in one run.

Same model (SmolLM2-135M-Instruct Q4_1: llama.cpp and transformers load the GGUF, we load the
.mcp this checkout's compiler makes from it), same prompts, same thread count. Each engine
runs in its own subprocess (so peak RSS and the cold load are its own); each figure is the
median, min and max of several runs. See benchmarks/README.md for what each figure means.

    make install && .venv/bin/pip install -c constraints/cpu.txt -e '.[llamacpp]'   # once: builds llama.cpp
    .venv/bin/python benchmarks/engine.py [--quick] [--engines ours,llamacpp,transformers]
        [--runs N] [--threads N] [--model NAME] [--mcp FILE] [--wait-quiet S] [--json FILE] [--write-results [FILE]]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from enginebench import report, runinfo  # noqa: E402
from enginebench.measure import OtherLoad, wait_until_quiet  # noqa: E402
from enginebench.spec import DECODE_PROMPTS, Settings, WorkerSpec, build_prompts  # noqa: E402
from enginebench.runinfo import NOISY_SHARE  # noqa: E402
from enginebench.worker import run_bandwidth, run_measured, run_worker, worker_main  # noqa: E402

PACKAGES = ("mcp2026", "torch", "llama-cpp-python", "transformers", "numpy")
WORKER_TIMEOUT_S = {"quick": 900, "full": 3600}


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    if args.worker:
        worker_main(*args.worker)
        return
    command = runinfo.command_line(__file__, argv)
    settings = Settings.quick() if args.quick else Settings.full()
    if args.runs:
        settings = dataclasses.replace(settings, runs=args.runs)
    if args.wait_quiet is None:
        args.wait_quiet = 0 if args.quick else 300
    with tempfile.TemporaryDirectory(prefix="enginebench-model-") as folder:
        base, model_line = _prepare(args, settings, Path(folder))
        bandwidth = _run_bandwidth(base, args.wait_quiet)
        results, others = _run_engines(args, base, settings, command)
        lines = _render(command, settings, base, model_line, bandwidth, results, others)
    print("\n".join(lines))
    if args.json:
        _save_json(args.json, command, settings, bandwidth, results, others)
    if args.write_results:
        report.write_section(Path(args.write_results), command, lines)
        print(f"wrote the engine.py section of {args.write_results}")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 runs, shorter prompts and outputs")
    parser.add_argument("--engines", default=",".join(report.ENGINES), type=_engine_list,
                        help="comma-separated subset of ours,lean,llamacpp,transformers")
    parser.add_argument("--runs", type=int, help="runs per figure (default 5, --quick 2)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every engine (default 2)")
    parser.add_argument("--model", default="smollm2-135m-instruct",
                        help="the catalog model whose GGUF every engine runs (default smollm2-135m-instruct; "
                             "e.g. gemma3-270m with --engines ours,llamacpp)")
    parser.add_argument("--mcp", help="measure this .mcp instead of compiling the GGUF with this checkout")
    parser.add_argument("--wait-quiet", type=float, metavar="SECONDS",
                        help="before each engine, wait up to SECONDS for other processes to use under 10%% "
                             "of the cores (default 300, --quick 0)")
    parser.add_argument("--json", help="also write every raw sample to this file")
    parser.add_argument("--write-results", nargs="?", const=str(HERE / "RESULTS.md"), metavar="FILE",
                        help="put the report into FILE's engine.py section (default benchmarks/RESULTS.md)")
    parser.add_argument("--worker", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _engine_list(text: str) -> list[str]:
    engines = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(engines) - set(report.ENGINES))
    if unknown or not engines:
        raise argparse.ArgumentTypeError(f"unknown engine(s) {', '.join(unknown) or '(none)'}; "
                                         f"choose from {','.join(report.ENGINES)}")
    return engines


def _prepare(args, settings: Settings, folder: Path) -> tuple[WorkerSpec, str]:
    """The model files and the prompts every engine gets."""
    from mcp.engine.tokenizer import Tokenizer
    from mcp.compiler import catalog
    from mcp.compiler.compiler import compile_model
    from mcp.modelfile.reader import open_model

    gguf = catalog.fetch_source(args.model)
    if args.mcp:
        mcp, how = Path(args.mcp).resolve(), "given with --mcp"
    else:
        mcp = folder / f"{args.model}.mcp"
        started = datetime.datetime.now()
        compile_model(gguf, mcp, name=args.model)
        how = f"compiled by this checkout in {(datetime.datetime.now() - started).total_seconds():.1f} s"
    with open_model(mcp) as model_file:
        pp_text, chat_text = build_prompts(Tokenizer.from_spec(model_file.header.tokenizer), settings.prompt_tokens)
    spec = WorkerSpec(engine="", mcp_path=str(mcp), gguf_path=str(gguf), threads=args.threads,
                      settings=settings, pp_text=pp_text, chat_text=chat_text)
    line = (f"model: {gguf.name} ({gguf.stat().st_size / 1e6:.1f} MB) for llama.cpp and transformers; "
            f"ours: {mcp.name} ({mcp.stat().st_size / 1e6:.1f} MB), {how}")
    return spec, line


def _run_engines(args, base: WorkerSpec, settings: Settings, command: str) -> tuple[dict, dict]:
    """Each engine's results, and the share of the cores others used while it ran.

    With --json the samples so far are saved after each engine, so a run cut short keeps them.
    """
    results, others = {}, {}
    for engine in args.engines:
        _wait_until_quiet(engine, args.wait_quiet)
        watch = OtherLoad()
        results[engine] = _run_engine(engine, base, "quick" if args.quick else "full")
        others[engine] = watch.share()
        if "error" in results[engine]:
            print(f"[{engine}] not measured: {results[engine]['error']}", file=sys.stderr)
        if args.json:
            _save_json(args.json, command, settings, None, results, others)
    return results, others


def _save_json(path: str, command: str, settings: Settings, bandwidth: dict | None, results: dict,
               others: dict) -> None:
    Path(path).write_text(json.dumps({"command": command, "settings": dataclasses.asdict(settings),
                                      "bandwidth": bandwidth, "others_share": others, "results": results},
                                     indent=1))


def _wait_until_quiet(name: str, max_wait_s: float) -> None:
    if max_wait_s:
        waited, share = wait_until_quiet(max_wait_s, NOISY_SHARE)
        print(f"[{name}] waited {waited:.0f} s for a quiet machine (others {share or 0:.0%})", file=sys.stderr)


def _run_bandwidth(base: WorkerSpec, max_wait_s: float) -> dict:
    _wait_until_quiet("bandwidth", max_wait_s)
    return run_bandwidth(base)


def _run_engine(engine: str, base: WorkerSpec, mode: str) -> dict:
    """The engine's main worker, then runs-1 more fresh processes for cold-load samples."""
    spec = dataclasses.replace(base, engine=engine)
    result, spec = run_measured(spec, WORKER_TIMEOUT_S[mode])
    if "error" in result:
        return result
    residents = [result["info"].get("resident_after_drop")]
    for _ in range(spec.settings.runs - 1):
        cold = run_worker(dataclasses.replace(spec, cold_only=True), WORKER_TIMEOUT_S[mode])
        if cold.result:
            result["figures"]["load_cold_ms"] += cold.result["figures"]["load_cold_ms"]
            residents.append(cold.result["info"].get("resident_after_drop"))
    result["info"]["resident_after_drop"] = residents
    return result


def _render(command, settings, base, model_line, bandwidth, results, others) -> list[str]:
    ours_info = (results.get("ours") or {}).get("info", {})
    any_info = next((r["info"] for r in results.values() if "info" in r), {})
    info = ours_info or any_info
    gbps = bandwidth.get("torch_gbps")
    figures = {}
    target = runinfo.rss_target_mib(base.mcp_path, settings, info.get("pp_tokens", settings.prompt_tokens), 1.5)
    for engine, result in results.items():
        if "figures" in result:
            figures[engine] = result["figures"]
            report.add_derived(figures[engine], result["info"], gbps)
            if engine in report.RATIOED:
                figures[engine]["rss_target_mib"] = [target]
    rows = report.figure_rows(settings.batch_sizes, info.get("pp_tokens", settings.prompt_tokens),
                              settings.decode_tokens, info.get("chat_tokens", "?"))
    lines = [
        f"Engine benchmark, {base.threads} threads each, median [min-max] of {settings.runs} runs"
        + (" (--quick)" if settings.runs < 5 or settings.decode_tokens < 128 else ""),
        f"command: {command}",
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        (f"cpu: {runinfo.cpu_model()}, {len(os.sched_getaffinity(0))} cores usable, "
         f"torch cpu capability {bandwidth.get('cpu_capability', '?')}"),
        "versions: " + ", ".join(f"{name} {runinfo.version(name)}" for name in PACKAGES) + f", git {runinfo.git_revision()}",
        model_line,
        _prompt_line(settings, results),
        f"memory read bandwidth: {runinfo.bandwidth_line(bandwidth)}",
        runinfo.others_line(others),
        "",
        *report.table(rows, {e: figures.get(e) for e in results}, {e: r.get("marks", {}) for e, r in results.items()}),
        "",
        "ratio: speed rows ours/llama.cpp, time and memory rows llama.cpp/ours: > 1 means ours is better",
        (f"aggregate decode: {settings.batch_tokens} tokens per sequence, greedy, EOS ignored; "
         "prompts are the first N of the benchmark's short prompts"),
        "",
        *report.target_lines(report.issue_targets(settings.batch_sizes), {e: figures.get(e) for e in results}),
    ]
    return lines + _notes(results, ours_info, gbps)


def _prompt_line(settings: Settings, results: dict) -> str:
    counts = {report.TITLES[e]: (r["info"].get("pp_tokens"), r["info"].get("chat_tokens"))
              for e, r in results.items() if "info" in r}
    seen = ", ".join(f"{title} {pp}/{chat}" for title, (pp, chat) in counts.items())
    return (f"prompts: prompt processing ~{settings.prompt_tokens} tokens of raw text, chat prompt = one user "
            f"message through the chat template; tokens seen (pp/chat): {seen}; "
            f"decode prompt {DECODE_PROMPTS[0]!r}, {settings.decode_tokens} tokens, greedy, EOS ignored")



def _notes(results: dict, ours_info: dict, gbps: float | None) -> list[str]:
    lines = ["", "notes:"]
    if ours_info.get("mcp_tensor_bytes"):
        mcp_bytes = ours_info["mcp_tensor_bytes"]
        bound = f", bound {gbps * 1e9 / mcp_bytes:.0f} tok/s" if gbps else ""
        lines.append(f"- ours: weights read per token = the loaded module's parameters and buffers "
                     f"(each tensor once, rotary tables left out), precision {ours_info.get('precision')}; "
                     f"the .mcp file's tensor data is {mcp_bytes / 1e6:.1f} MB{bound}")
    lines.append("- llama.cpp: weights = llama_model_size(); transformers: fp32 parameters, tied head once")
    for engine, result in results.items():
        title = report.TITLES[engine]
        if "error" in result:
            lines.append(f"- {title}: not measured: {result['error']}")
            continue
        lines.extend(f"- {title}: {note}" for note in result["notes"])
        residents = [f"{r:.0%}" for r in result["info"].get("resident_after_drop", []) if r is not None]
        if residents:
            lines.append(f"- {title}: cold loads: model file resident in the page cache after dropping it: "
                         f"{', '.join(residents)}")
    lines.append("how each engine is timed:")
    for engine, result in results.items():
        for figure, method in result.get("methods", {}).items():
            lines.append(f"  {report.TITLES[engine]:<12} {figure:<6} {method}")
    return lines






if __name__ == "__main__":
    main()
