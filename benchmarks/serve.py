"""Issue 4's comparison in one run: the same seeded load against several serving systems.

Systems (``--systems``, in this order; the first is compared with the others):

- ``slo``: our engine in process, ``scheduler.policy: slo``, each request's class and tenant passed;
- ``fcfs``: the same engine with ``scheduler.policy: fcfs`` (the classes are passed and ignored);
- ``llamacpp``: llama.cpp through its OpenAI API: ``--llama-url`` of a running server, or one
  started here: the C++ ``llama-server --parallel N`` when built (``servebench/build_llama_server.sh``,
  or ``--llama-server PATH``), else ``python -m llama_cpp.server`` when its extra is installed;
- ``sdk``: our SDK with the session's default config and no SLO options (works on any build).

Prints each system's SLO report, then per class attainment and goodput and the throughput side
by side with the ratios first/other, and the issue's targets met or not. See benchmarks/README.md.

    .venv/bin/python benchmarks/serve.py [--quick] [--systems slo,fcfs,llamacpp] [--scenario mixed]
        [--load X | --rate R] [--num-requests N] [--max-tokens N] [--json FILE] [--plots DIR]
        [--write-results [FILE]]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from servebench import llama_server, results  # noqa: E402

from mcp.base.errors import MCPError  # noqa: E402
from mcp.ops.loadgen.bench import run_bench  # noqa: E402
from mcp.ops.loadgen.calibrate import calibrate  # noqa: E402
from mcp.ops.loadgen.command import workload_from_args  # noqa: E402
from mcp.ops.loadgen.compare import SystemRun, check_targets, format_comparison  # noqa: E402
from mcp.ops.loadgen.http_target import OpenAIHTTPTarget  # noqa: E402
from mcp.ops.loadgen.mix import DEFAULT_CLASS_MIX, DEFAULT_TENANTS, SLOTable  # noqa: E402
from mcp.ops.loadgen.report import build_report  # noqa: E402
from mcp.ops.loadgen.sdk_target import InProcessTarget  # noqa: E402
from mcp.ops.loadgen.session_config import session_config, session_slo_table  # noqa: E402
from mcp.ops.loadgen.table import format_table  # noqa: E402

SYSTEMS = ("slo", "fcfs", "llamacpp", "sdk")
POLICIES = {"slo": "slo", "fcfs": "fcfs", "sdk": None}


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    command = "benchmarks/serve.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    spec = workload_from_args(args)
    slos = session_slo_table(session_config(None, None)) or SLOTable.default()  # what the engine schedules by
    runs, notes, rate, calibration = [], [], args.rate, None
    for system in args.systems:
        with ExitStack() as stack:
            target = _open(system, args, stack, notes)
            if target is None:
                continue
            if rate is None:
                calibration = calibrate(target, spec.max_tokens, slo_class="critical")
                rate = args.load * calibration.single_stream_rate
                notes.append(f"rate: {args.load} x the single-stream rate {calibration.single_stream_rate:.3g} req/s "
                             f"measured on {system} (one {spec.max_tokens}-token request alone: "
                             f"E2E {calibration.e2e_s:.2f} s, decode {calibration.decode_tokens_per_s:.1f} tok/s)")
            (run,) = run_bench(target, spec, [rate], slos, drain_timeout_s=args.drain_timeout)
            runs.append((system, target.describe(), run))
            print(f"\n{system}: {target.describe()}\n{format_table(run.summary)}", flush=True)
    if not runs:
        print("no system could run:\n" + "\n".join(notes), file=sys.stderr)
        return 2
    lines = _report_lines(spec, rate, runs)
    print("\n" + "\n".join([*lines, *notes]))
    _write_outputs(args, command, runs, slos, calibration, lines, notes)
    return 0


def _open(system: str, args: argparse.Namespace, stack: ExitStack, notes: list[str]):
    """The target of one system, or None (with a note saying why) when it cannot run here."""
    if system == "llamacpp":
        return _llama_target(args, stack, notes)
    from mcp.runtime.session import Session

    policy = POLICIES[system]
    try:
        session = stack.enter_context(Session(session_config(None, policy)))
    except MCPError as exc:
        notes.append(f"{system}: not run: {exc}")
        return None
    model = session.load_model(args.model)
    return InProcessTarget(model, send_slo_options=policy is not None, ignore_eos=True, policy=policy)


def _llama_target(args: argparse.Namespace, stack: ExitStack, notes: list[str]):
    """llama.cpp's chat endpoint (its chat template from the GGUF, as ours applies the model's)."""
    options = {"ignore_eos": True}
    url = args.llama_url
    if url is None:
        url, options = _start_llama_server(args, stack, notes)
        if url is None:
            return None
    target = OpenAIHTTPTarget(url, args.llama_model, endpoint="chat", send_slo_options=False, **options)
    stack.callback(target.close)
    return target


def _start_llama_server(args: argparse.Namespace, stack: ExitStack, notes: list[str]) -> tuple[str | None, dict]:
    """The C++ llama-server when built, else ``python -m llama_cpp.server``; (None, {}) if neither runs here."""
    from mcp.compiler import catalog

    binary = args.llama_server or (llama_server.BUILT_BINARY if llama_server.BUILT_BINARY.exists() else None)
    reason = None if binary is not None else llama_server.why_not_startable()
    if reason is not None:
        notes.append(f"llamacpp: not run: {reason}; or build llama-server "
                     "(benchmarks/servebench/build_llama_server.sh) or give --llama-url")
        return None, {}
    gguf = catalog.fetch_source(catalog.DEFAULT_MODEL)
    log = Path(tempfile.gettempdir()) / "serve-llama-server.log"
    if binary is not None:
        command = lambda port: llama_server.cpp_server_command(  # noqa: E731
            binary, gguf, args.threads, 2048, args.llama_parallel, port)
        notes.append(f"llamacpp: the C++ llama-server on the same GGUF, --parallel {args.llama_parallel} "
                     f"(continuous batching), {args.threads} threads")
        return stack.enter_context(llama_server.started_server(command, log)), {"ignore_eos": True}
    command = lambda port: llama_server.python_server_command(gguf, args.threads, 2048, port)  # noqa: E731
    notes.append("llamacpp: python -m llama_cpp.server on the same GGUF (one request at a time, no continuous "
                 "batching; EOS kept out by logit_bias as it has no ignore_eos)")
    url = stack.enter_context(llama_server.started_server(command, log))
    return url, {"ignore_eos": False, "extra_body": {"logit_bias": llama_server.eos_logit_bias(gguf)}}


def _report_lines(spec, rate: float, runs: list) -> list[str]:
    systems = [SystemRun(name, run.summary) for name, _, run in runs]
    head = (f"same workload for all: {spec.scenario}, {len(runs[0][2].records)} requests at {rate:.3g} req/s, "
            f"max_tokens {spec.max_tokens}, classes {spec.class_mix.to_dict()}, seed {spec.seed}")
    return [head, "", *format_comparison(systems), "", *check_targets(systems)]


def _write_outputs(args, command: str, runs: list, slos: SLOTable, calibration, lines: list[str],
                   notes: list[str]) -> None:
    if args.json is not None:
        data = {"command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "systems": {name: build_report([run], target, slos, command,
                                               calibration.to_dict() if calibration else None)
                            for name, target, run in runs}}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if args.plots is not None:
        from mcp.ops.loadgen.plots import write_plots

        for name, _, run in runs:
            for path in write_plots([run], slos, args.plots / name, f"{run.spec.scenario}, {name}"):
                print(f"wrote {path}")
    if args.write_results is not None:
        date = time.strftime("%Y-%m-%d", time.gmtime())
        results.write_section(args.write_results, f".venv/bin/python {command}", lines,
                              ["", f"Run {date}. " + " ".join(notes)] if notes else [])
        print(f"wrote its section of {args.write_results}")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 8 requests of 8 tokens")
    parser.add_argument("--systems", type=_systems, default=["slo", "fcfs", "llamacpp"])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="ours: a .mcp path or a catalog name")
    parser.add_argument("--llama-url", help="a running llama-server (e.g. llama-server -m X.gguf --parallel 8)")
    parser.add_argument("--llama-model", default="smollm2", help="the model name to send to --llama-url")
    parser.add_argument("--llama-server", type=Path,
                        help="a llama-server binary to start (default: .cache/llama-server/llama-server if built)")
    parser.add_argument("--llama-parallel", type=int, default=8, help="slots of a llama-server started here")
    parser.add_argument("--threads", type=int, default=2, help="threads of a llama.cpp server started here")
    parser.add_argument("--scenario", choices=("poisson", "gamma", "bursty-zipf", "mixed"), default="mixed")
    parser.add_argument("--rate", type=float, help="requests/s (default: --load x the single-stream rate)")
    parser.add_argument("--load", type=float, default=3.0, help="multiple of the calibrated single-stream rate")
    parser.add_argument("--burstiness", type=float, default=1.0)
    parser.add_argument("--num-requests", type=int)
    parser.add_argument("--duration", type=float)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--class-mix", default=DEFAULT_CLASS_MIX)
    parser.add_argument("--tenants", default=DEFAULT_TENANTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plots", type=Path)
    parser.add_argument("--write-results", type=Path, nargs="?", const=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    quick = args.quick
    args.num_requests = args.num_requests or (8 if quick else None if args.duration else 120)
    args.max_tokens = args.max_tokens or (8 if quick else 32)
    args.prompts = None
    return args


def _systems(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown system(s) {', '.join(unknown) or '(none)'}; use {', '.join(SYSTEMS)}")
    return names


if __name__ == "__main__":
    try:
        sys.exit(main())
    except MCPError as exc:
        print(f"serve.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
