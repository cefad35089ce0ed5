"""``mcp2026 bench serve``: flags -> workload, target, SLO table; run; print; write JSON and plots.

Every flag is checked before a model is loaded or a request is sent, and a bad one is an
``InvalidRequestError`` naming it (the CLI prints it on one line and exits 2).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from contextlib import ExitStack
from pathlib import Path

from mcp.base.errors import InvalidRequestError, MCPError
from mcp.ops.loadgen.bench import run_bench
from mcp.ops.loadgen.calibrate import Calibration, calibrate
from mcp.ops.loadgen.mix import SLOTable, parse_class_mix, parse_mix, parse_slo_table
from mcp.ops.loadgen.prompts import BUILTIN_PROMPTS, load_prompts
from mcp.ops.loadgen.report import BenchRun, build_report, write_report
from mcp.ops.loadgen.table import format_sweep, format_table
from mcp.ops.loadgen.target import Target
from mcp.ops.loadgen.workload import WorkloadSpec


def bench_serve(args: argparse.Namespace) -> int:
    spec = workload_from_args(args)
    rates = rates_from_args(args)
    if args.slo:
        parse_slo_table(args.slo)  # checked now, applied once the target's own targets are known
    _check_outputs(args)
    with ExitStack() as stack:
        target = open_target(args, stack)
        slos = scoring_table(args.slo, target)
        calibration = None
        if args.calibrate:
            calibration = calibrate(target, spec.max_tokens, slo_class=spec.class_mix.names[0])
            print(_describe_calibration(calibration))
            rates = [rate * calibration.single_stream_rate for rate in rates]
        described = target.describe()  # now, while the model is loaded
        print(f"target: {described}")
        print(f"workload: {dict(spec.to_dict(), rate=[round(r, 4) for r in rates])}")
        runs = run_bench(target, spec, rates, slos, drain_timeout_s=args.drain_timeout, on_run=_print_run)
    _finish(args, runs, described, slos, calibration)
    _check_any_finished(runs)
    return 0


def workload_from_args(args: argparse.Namespace) -> WorkloadSpec:
    prompts = load_prompts(args.prompts) if args.prompts else BUILTIN_PROMPTS
    if args.num_requests is None and args.duration is None:
        raise InvalidRequestError("give --num-requests N or --duration SECONDS (or both); a run must be bounded")
    return WorkloadSpec(
        scenario=args.scenario, rate=1.0, burstiness=args.burstiness, num_requests=args.num_requests,
        duration_s=args.duration, max_tokens=args.max_tokens, seed=args.seed,
        class_mix=parse_class_mix(args.class_mix), tenants=parse_mix(args.tenants, "--tenants"), prompts=prompts)


def scoring_table(slo_flag: str | None, target: Target) -> SLOTable:
    """``--slo`` over the targets the in-process engine schedules by (else the defaults)."""
    base = getattr(target, "slo_table", None) or SLOTable.default()
    return parse_slo_table(slo_flag, base) if slo_flag else base


def rates_from_args(args: argparse.Namespace) -> list[float]:
    if args.sweep is not None and args.rate is not None:
        raise InvalidRequestError("give --rate or --sweep, not both")
    if args.sweep is None and args.rate is None:
        raise InvalidRequestError("give --rate REQUESTS_PER_S (or --sweep R1,R2,...)")
    if args.rate is not None:
        return [_positive_rate(str(args.rate), "--rate")]
    rates = [_positive_rate(part, "--sweep") for part in args.sweep.split(",") if part.strip()]
    if not rates:
        raise InvalidRequestError("--sweep is empty; give rates like 0.5,1,2")
    return rates


def _positive_rate(text: str, flag: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        raise InvalidRequestError(f"{flag}: {text.strip()!r} is not a number of requests/s") from None
    if not (math.isfinite(rate) and rate > 0):
        raise InvalidRequestError(f"{flag}: rates must be positive requests/s, got {text.strip()}")
    return rate


def _check_outputs(args: argparse.Namespace) -> None:
    if args.drain_timeout <= 0:
        raise InvalidRequestError(f"--drain-timeout must be positive seconds, got {args.drain_timeout}")
    if args.plots is not None:
        from mcp.ops.loadgen.plots import load_pyplot

        load_pyplot()  # fail now, not after the run, when matplotlib is missing


def open_target(args: argparse.Namespace, stack: ExitStack) -> Target:
    """The HTTP target for ``--url``, else the in-process SDK target for ``--model``."""
    send = not args.no_slo_options
    if args.url is not None:
        if args.model_name is None:
            raise InvalidRequestError("--url needs --model-name NAME (the model the server serves)")
        if args.model is not None or args.policy is not None or args.config is not None:
            raise InvalidRequestError("--model, --policy and --config are for the in-process target; "
                                      "with --url the server chooses them")
        from mcp.ops.loadgen.http_target import OpenAIHTTPTarget

        target = OpenAIHTTPTarget(args.url, args.model_name, endpoint=args.endpoint, send_slo_options=send,
                                  temperature=args.temperature, ignore_eos=not args.no_ignore_eos,
                                  api_key=args.api_key)
        stack.callback(target.close)
        return target
    if args.model is None:
        raise InvalidRequestError("give --model NAME_OR_PATH (in-process) or --url URL --model-name NAME (HTTP)")
    return _in_process(args, stack, send)


def _in_process(args: argparse.Namespace, stack: ExitStack, send: bool) -> Target:
    from mcp.ops.loadgen.sdk_target import InProcessTarget
    from mcp.ops.loadgen.session_config import session_config, session_slo_table
    from mcp.runtime.session import Session

    session = stack.enter_context(Session(session_config(args.config, args.policy)))
    model = session.load_model(args.model)
    return InProcessTarget(model, send_slo_options=send, temperature=args.temperature,
                           ignore_eos=not args.no_ignore_eos, policy=args.policy,
                           slo_table=session_slo_table(session.config))


def _check_any_finished(runs: list[BenchRun]) -> None:
    """A bench where no request finished measured nothing: say why, and exit 2."""
    records = [r for run in runs for r in run.records]
    if any(r.status == "ok" for r in records):
        return
    first = next((r.error for r in records if r.error), "no error message")
    hint = "; an SDK or server without SLO classes needs --no-slo-options" if "slo_class" in first else ""
    raise MCPError(f"no request finished ({len(records)} sent); the first error: {first}{hint}")


def _describe_calibration(c: Calibration) -> str:
    return (f"calibration: one request alone, {c.max_tokens} tokens: TTFT {1000 * c.ttft_s:.0f} ms, "
            f"decode {c.decode_tokens_per_s:.1f} tok/s, E2E {c.e2e_s:.2f} s -> single-stream rate "
            f"{c.single_stream_rate:.3g} req/s (the rates given are multiples of it)")


def _print_run(run: BenchRun) -> None:
    print()
    print(format_table(run.summary))
    errors = sorted({r.error for r in run.records if r.error and r.status != "refused"})
    for error in errors[:3]:
        print(f"  error: {error}")
    sys.stdout.flush()


def _finish(args: argparse.Namespace, runs: list[BenchRun], described: dict, slos: SLOTable,
            calibration: Calibration | None) -> None:
    if len(runs) > 1:
        print()
        print(format_sweep([run.summary for run in runs]))
    command = "mcp2026 " + shlex.join(sys.argv[1:])
    if args.json is not None:
        report = build_report(runs, described, slos, command,
                              calibration.to_dict() if calibration else None)
        print(f"wrote {write_report(report, args.json)}")
    if args.plots is not None:
        from mcp.ops.loadgen.plots import write_plots

        title = f"{args.scenario}, {described.get('policy') or described['kind']}"
        for path in write_plots(runs, slos, Path(args.plots), title):
            print(f"wrote {path}")
