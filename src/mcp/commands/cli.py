"""The ``mcp2026`` command line: pull, compile, inspect, run, serve, check consistency, bench serve,
registry, route, gateway, rollout, audit, attest, compliance, keys, sign, verify-model, bundle,
sandbox check.

Every ``MCPError`` is printed as one line on stderr with exit status 2; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from mcp.base.errors import MCPError


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 1
    try:
        return args.handler(args) or 0
    except MCPError as exc:
        print(f"mcp2026: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp2026", description="MCP 2026 inference runtime")
    parser.add_argument("--version", action="version", version=f"mcp2026 {_version()}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    pull = commands.add_parser("pull", help="fetch a catalog model and compile it to .mcp")
    pull.add_argument("name", nargs="?", help="catalog name, e.g. smollm2-135m-instruct")
    pull.add_argument("--list", action="store_true", help="list the catalog")
    pull.add_argument("--force", action="store_true", help="recompile even if cached")
    pull.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr, even on a terminal")
    pull.set_defaults(handler=_pull)

    compile_ = commands.add_parser("compile", help="compile a GGUF file or HF folder to .mcp")
    compile_.add_argument("source", type=Path)
    compile_.add_argument("-o", "--output", type=Path, required=True)
    compile_.add_argument("--precision", default="source", choices=("source", "auto", "int4", "fp32", "f16", "bf16"))
    compile_.add_argument("--name", help="model name recorded in the header")
    compile_.add_argument("--license", help="license recorded in the lineage")
    compile_.add_argument("--lineage", type=Path, metavar="YAML",
                          help="declared lineage: datasets, base model, license (docs/compliance.md)")
    compile_.add_argument("--dataset", action="append", default=[], metavar="name=X[,license=..,sha256=..,source=..]",
                          help="a dataset the model was trained on (repeatable)")
    compile_.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr, even on a terminal")
    compile_.set_defaults(handler=_compile)

    inspect = commands.add_parser("inspect", help="print a .mcp file's header, tensors, plan, lineage")
    inspect.add_argument("file", type=Path)
    inspect.add_argument("--verify", action="store_true", help="check every tensor's sha256")
    inspect.add_argument("--plan", action="store_true", help="leave out the tensor table (header, plan, lineage)")
    inspect.set_defaults(handler=_inspect)

    run = commands.add_parser("run", help="answer one prompt with a model")
    run.add_argument("model", help="a .mcp path or a catalog name")
    run.add_argument("prompt")
    run.add_argument("--config", type=Path, help="an mcp-config.yaml")
    run.add_argument("--max-tokens", type=int)
    run.add_argument("--temperature", type=float)
    run.add_argument("--seed", type=int)
    run.add_argument("--raw", action="store_true", help="do not apply the chat template")
    run.add_argument("--lean", action="store_true",
                     help="decode without torch (mcp.engine.lean: one sequence, about half the memory; docs/lean.md)")
    run.add_argument("--threads", type=int, help="CPU threads (default: the config's, else every usable core)")
    run.set_defaults(handler=_run)

    serve = commands.add_parser("serve", help="serve the OpenAI-compatible HTTP API (docs/api.md)")
    serve.add_argument("--config", type=Path, help="an mcp-config.yaml with a serving: section")
    serve.add_argument("--host", help="address to bind (default serving.host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default serving.port, 8000)")
    serve.add_argument("--model", action="append", default=[], metavar="[NAME=]SOURCE",
                       help="also serve this .mcp path or catalog name (repeatable)")
    serve.add_argument("--hash-key", metavar="KEY", help="print the sha256 of an API key for the config, and exit")
    serve.set_defaults(handler=_serve)
    check = commands.add_parser("check", help="checks: check consistency (the cross-engine matrix)")
    _add_check_consistency(check.add_subparsers(title="checks", metavar="CHECK"))

    bench = commands.add_parser("bench", help="benchmarks: bench serve (load generator and SLO report)")
    _add_bench_serve(bench.add_subparsers(title="benchmarks", metavar="BENCH"))
    _add_gateway_commands(commands)
    return parser


def _add_gateway_commands(commands: argparse._SubParsersAction) -> None:
    """``registry``, ``route``, ``gateway`` and ``rollout`` (the gateway's), ``audit``, ``attest``,
    ``compliance``, ``keys``, ``sign``, ``verify-model`` and ``bundle`` (the governance plane's): each
    module imports nothing heavy to define its commands."""
    from mcp.gateway.gateway_commands import add_gateway_commands
    from mcp.gateway.registry_commands import add_registry_commands
    from mcp.gateway.route_commands import add_route_commands
    from mcp.governance.attestation.commands import add_attest_commands
    from mcp.governance.audit.commands import add_audit_commands
    from mcp.commands.compliance import add_compliance_commands
    from mcp.commands.evidence import add_bundle_commands
    from mcp.governance.signing.commands import add_signing_commands
    from mcp.serving.isolation.commands import add_sandbox_commands

    add_registry_commands(commands)
    add_route_commands(commands)
    add_gateway_commands(commands)
    add_audit_commands(commands)
    add_attest_commands(commands)
    add_compliance_commands(commands)
    add_signing_commands(commands)
    add_bundle_commands(commands)
    add_sandbox_commands(commands)


def _add_bench_serve(benches: argparse._SubParsersAction) -> None:
    """Flags of ``bench serve``; docs/loadgen.md explains each."""
    serve = benches.add_parser("serve", help="send a seeded load to a model; report SLO attainment per class",
                               epilog="Scenarios, metrics and outputs: docs/loadgen.md")
    target = serve.add_argument_group("target (in-process --model, or --url with --model-name)")
    target.add_argument("--model", help="in-process: a .mcp path or a catalog name")
    target.add_argument("--config", type=Path, help="in-process: an mcp-config.yaml for the session")
    target.add_argument("--policy", choices=("slo", "fcfs"), help="in-process: the scheduler policy")
    target.add_argument("--url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000")
    target.add_argument("--model-name", help="with --url: the model name to request")
    target.add_argument("--endpoint", choices=("completions", "chat"), default="completions",
                        help="with --url: /v1/completions or /v1/chat/completions (default completions)")
    target.add_argument("--api-key", help="with --url: sent as a Bearer token")
    target.add_argument("--no-slo-options", action="store_true",
                        help="do not send slo_class/tenant (SDK) or x-sla-class/x-tenant (HTTP)")
    load = serve.add_argument_group("load")
    load.add_argument("--scenario", choices=("poisson", "gamma", "bursty-zipf", "mixed"), default="poisson",
                      help="arrivals, prompt popularity and budgets (default poisson)")
    load.add_argument("--rate", type=float, help="requests/s (with --calibrate: multiples of the single-stream rate)")
    load.add_argument("--sweep", metavar="R1,R2,...", help="one run per rate, same requests (instead of --rate)")
    load.add_argument("--calibrate", action="store_true", help="measure one request alone first; scale rates by it")
    load.add_argument("--burstiness", type=float, default=1.0, help="gamma shape (gamma, bursty-zipf); 1 = Poisson")
    load.add_argument("--duration", type=float, help="seconds of arrivals")
    load.add_argument("--num-requests", type=int, help="at most this many requests")
    load.add_argument("--class-mix", default="critical=0.1,high=0.2,medium=0.3,low=0.4", metavar="CLASS=WEIGHT,...",
                      help="SLO classes of the requests (default critical=0.1,high=0.2,medium=0.3,low=0.4)")
    load.add_argument("--tenants", default="tenant-a,tenant-b", metavar="NAME[=WEIGHT],...",
                      help="tenants of the requests (default tenant-a,tenant-b)")
    load.add_argument("--max-tokens", type=int, default=64, help="tokens per request (default 64)")
    load.add_argument("--temperature", type=float, default=0.0, help="(default 0: greedy)")
    load.add_argument("--no-ignore-eos", action="store_true", help="let requests stop at EOS")
    load.add_argument("--prompts", type=Path, help='a JSONL file of {"prompt": ...} lines (default: built-in)')
    load.add_argument("--seed", type=int, default=0, help="seeds arrivals, prompts, classes, tenants (default 0)")
    report = serve.add_argument_group("report")
    report.add_argument("--slo", metavar="CLASS=TTFT/TPOT,...",
                        help="score by these targets in seconds, e.g. critical=0.5/0.05")
    report.add_argument("--drain-timeout", type=float, default=120.0,
                        help="seconds after the last arrival before running requests are stopped")
    report.add_argument("--json", type=Path, help="write every request record and the summary here")
    report.add_argument("--plots", type=Path, help="write PNG plots into this folder")
    serve.set_defaults(handler=_bench_serve)


def _add_check_consistency(checks: argparse._SubParsersAction) -> None:
    """Flags of ``check consistency``; docs/consistency.md explains each."""
    from mcp.ops.consistency.arguments import add_arguments

    consistency = checks.add_parser("consistency", help="the same prompts on several engines, against a reference",
                                    epilog="Suites, tolerances, reports, golden files: docs/consistency.md")
    add_arguments(consistency)
    consistency.set_defaults(handler=_check_consistency)


def _check_consistency(args: argparse.Namespace) -> int:
    from mcp.ops.consistency.command import check_consistency

    return check_consistency(args)


def _pull(args: argparse.Namespace) -> int:
    from mcp.commands.progress_line import terminal_progress
    from mcp.compiler import catalog

    if args.list or not args.name:
        for entry in catalog.CATALOG.values():
            print(f"{entry.name:28} {entry.description} [{entry.license}]")
        return 0
    with terminal_progress(sys.stderr, args.quiet, summary=f"pulled {args.name}") as progress:
        path = catalog.pull(args.name, force=args.force, progress=progress)
    print(path)
    return 0


def _compile(args: argparse.Namespace) -> int:
    from mcp.commands.progress_line import terminal_progress
    from mcp.compiler.compiler import compile_model

    declared = _declared_lineage(args)
    with terminal_progress(sys.stderr, args.quiet) as progress:
        header = compile_model(args.source, args.output, precision=args.precision,
                               name=args.name, license=args.license, declared=declared, progress=progress)
    print(f"wrote {args.output} ({len(header.tensors)} tensors, {header.architecture.variant})")
    return 0


def _declared_lineage(args: argparse.Namespace):
    import dataclasses

    from mcp.modelfile.lineage_file import DeclaredLineage, load_lineage_file, parse_dataset_flag

    declared = load_lineage_file(args.lineage) if args.lineage else DeclaredLineage()
    flagged = tuple(parse_dataset_flag(text) for text in args.dataset)
    return dataclasses.replace(declared, datasets=declared.datasets + flagged)


def _inspect(args: argparse.Namespace) -> int:
    from mcp.modelfile.inspect import describe
    from mcp.modelfile.reader import open_model

    with open_model(args.file, verify=args.verify) as model_file:
        print(describe(model_file, show_plan=True, show_tensors=not args.plan))
        print(_resolved_plan(model_file.header))
        if args.verify:
            print("verify: every tensor matches its sha256")
    return 0


def _resolved_plan(header) -> str:
    """The kernels this machine would run, per tensor group (nothing is loaded)."""
    import torch

    from mcp.engine.engine import NATIVE_STEP_FAMILIES
    from mcp.engine.precision import Hardware, resolve

    plan = resolve(header.tensors, header.precision_plan, Hardware.detect(torch.device("cpu")),
                   native_step=header.architecture.architecture in NATIVE_STEP_FAMILIES)
    return "\n".join(["", "kernels on this machine (cpu)", *("  " + line for line in plan.describe())])


def _run(args: argparse.Namespace) -> int:
    options = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}
    if args.lean:
        return _run_lean(args, options)
    from mcp.config.runtime import RuntimeConfig, load_config
    from mcp.runtime.session import Session

    config = load_config(args.config) if args.config else None
    if args.threads is not None:
        config = dataclasses.replace(config or RuntimeConfig(), num_threads=args.threads)
    _pull_first(config or RuntimeConfig(), args.model)
    with Session(config) as session:
        model = session.load_model(args.model)
        _print_stream(model.stream(args.prompt, raw=args.raw, **options))
    return 0


def _pull_first(config, model: str) -> None:
    """A catalog name not pulled yet is pulled before the session loads it, with the progress
    ``pull`` shows (the session would pull it silently)."""
    from mcp.commands.progress_line import terminal_progress
    from mcp.compiler import catalog
    from mcp.config.model_path import catalog_name

    name = catalog_name(Path(model))
    if name not in catalog.CATALOG or Path(model).is_file() or catalog.compiled_path(name, config.cache_dir).is_file():
        return
    with terminal_progress(sys.stderr, False, summary=f"pulled {name}") as progress:
        catalog.pull(name, config.cache_dir, progress=progress)


def _run_lean(args: argparse.Namespace, options: dict) -> int:
    """``run --lean``: the torch-free decoder. Generation defaults come from the config as in a
    Session; a catalog name must be pulled already (compiling needs torch)."""
    from mcp.engine.lean import LeanModel
    from mcp.config.runtime import RuntimeConfig, load_config
    from mcp.config.model_path import resolve_model_path

    config = load_config(args.config) if args.config else RuntimeConfig()
    threads = config.num_threads if args.threads is None else args.threads
    model = LeanModel(resolve_model_path(config, args.model, pull=False), num_threads=threads,
                      max_context=config.max_context)
    defaults = {key: value for key, value in dataclasses.asdict(config.generation).items() if value is not None}
    chosen = {key: value for key, value in options.items() if value is not None}
    _print_stream(model.stream(args.prompt, raw=args.raw, **(defaults | chosen)))
    return 0


def _print_stream(deltas) -> None:
    for delta in deltas:
        print(delta, end="", flush=True)
    print()


def _serve(args: argparse.Namespace) -> int:
    from mcp.config.runtime import RuntimeConfig, load_config
    from mcp.config.serving import ServedModel

    if args.hash_key is not None:
        from mcp.serving.tenants import hash_key

        print(hash_key(args.hash_key))
        return 0
    from mcp.serving.launch import serve

    config = load_config(args.config) if args.config else RuntimeConfig()
    extra = []
    for item in args.model:
        name, _, source = item.rpartition("=")
        extra.append(ServedModel(name or Path(source).name.removesuffix(".mcp"), source))
    return serve(config, args.host, args.port, tuple(extra), str(args.config) if args.config else None)


def _bench_serve(args: argparse.Namespace) -> int:
    from mcp.ops.loadgen.command import bench_serve

    return bench_serve(args)


def _version() -> str:
    try:
        return version("mcp2026")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
