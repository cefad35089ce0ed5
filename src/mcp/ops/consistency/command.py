"""``mcp2026 check consistency``: load the suite, the model and the engines; run; report; exit.

Everything that can be refused (suite, tolerance table, unknown or uninstalled engines, a
pair with no tolerance rule, a golden file of another model) is refused before any engine
loads. Exit status 0 when every candidate meets its bounds, 1 on a violation (2, from the
CLI, for an error).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from mcp.backends.base import Backend
from mcp.backends.registry import ModelSources, check_available, create_backend
from mcp.base.errors import ConfigError
from mcp.base.paths import mcp_home
from mcp.compiler import catalog
from mcp.compiler.compiler import compile_model
from mcp.compiler.hf_source import folder_sha256
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.hashing import file_sha256
from mcp.modelfile.reader import open_model
from mcp.ops.consistency.golden import Golden, GoldenMismatch, check_golden, read_golden, write_golden
from mcp.ops.consistency.metrics import ReferenceRecord
from mcp.ops.consistency.report import MatrixReport, to_json, to_markdown
from mcp.ops.consistency.runner import SuiteInput, compare_candidate, run_reference, suite_inputs
from mcp.ops.consistency.suite import Suite, load_suite
from mcp.ops.consistency.tolerances import ToleranceTable, load_tolerances


@dataclass(frozen=True)
class ModelUnderTest:
    name: str
    sha256: str  # of the GGUF; of an HF folder, hf_source.folder_sha256
    sources: ModelSources
    tokenizer: Tokenizer


def check_consistency(args: argparse.Namespace) -> int:
    suite, table = load_suite(args.suite), load_tolerances(args.tolerances)
    specs = [s.strip() for s in args.engines.split(",") if s.strip()]
    if not specs and not args.record_golden:
        raise ConfigError("give candidates with --engines A,B,... (or --record-golden FILE to record only)")
    if args.golden and args.record_golden:
        raise ConfigError("--golden compares against a recorded file and --record-golden records one: give one")
    golden = read_golden(args.golden) if args.golden else None
    reference_name = golden.reference if golden else args.reference
    _check_engines(specs, reference_name, golden is None, table)
    model = resolve_model(args.model)
    inputs = suite_inputs(suite, model.tokenizer)
    references, reference = _references(args, golden, suite, model, inputs)
    report = run_matrix(suite, model, reference, references, inputs, specs, table)
    return _write(report, args)


def _check_engines(specs: list[str], reference: str, reference_runs: bool, table: ToleranceTable) -> None:
    for spec in specs:
        check_available(spec)
        table.rule_for(reference, create_name(spec))
    if reference_runs:
        check_available(reference)


def create_name(spec: str) -> str:
    return "http" if spec.startswith("http=") else spec


def resolve_model(name_or_path: str) -> ModelUnderTest:
    """The source (a catalog name, a ``.gguf`` file or a Hugging Face folder), its sha256, and its
    ``.mcp`` compiled once into the cache."""
    source = _source(name_or_path)
    sha = folder_sha256(source) if source.is_dir() else file_sha256(source)
    stem = source.name if source.is_dir() else source.stem
    compiled = mcp_home() / "consistency" / f"{stem}-{sha[:16]}.mcp"
    if not compiled.exists():
        compiled.parent.mkdir(parents=True, exist_ok=True)
        partial = compiled.with_suffix(".partial")
        compile_model(source, partial, precision="source", name=stem)
        partial.rename(compiled)
    with open_model(compiled) as model_file:
        tokenizer = Tokenizer.from_spec(model_file.header.tokenizer)
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    return ModelUnderTest(source.name, sha, ModelSources(source, compiled, encode), tokenizer)


def _source(name_or_path: str) -> Path:
    if name_or_path.endswith(".gguf"):
        if not Path(name_or_path).is_file():
            raise ConfigError(f"--model {name_or_path!r}: no such GGUF file")
        return Path(name_or_path)
    if Path(name_or_path).is_dir():
        if not (Path(name_or_path) / "config.json").is_file():
            raise ConfigError(f"--model {name_or_path!r}: a folder must be a Hugging Face model folder "
                              "(config.json, safetensors, tokenizer)")
        return Path(name_or_path)
    return catalog.fetch_source(name_or_path)


def _references(args, golden: Golden | None, suite: Suite, model: ModelUnderTest,
                inputs: tuple[SuiteInput, ...]) -> tuple[tuple[ReferenceRecord, ...], dict]:
    if golden is not None:
        check_golden(golden, args.golden, model.sha256, suite)
        _check_prompt_ids(golden, inputs, args.golden)
        return golden.records, {"name": golden.reference, "source": f"golden {args.golden}", "versions": golden.versions}
    backend = _loaded(args.reference, model)
    records = run_reference(backend, inputs, suite.top_logprobs, frozenset(model.tokenizer.eos_token_ids))
    versions = backend.versions()
    backend.unload()
    if args.record_golden:
        write_golden(args.record_golden, Golden(args.reference, versions, model.sha256, model.name, suite.name,
                                                suite.version, suite.sha256, suite.top_logprobs, records))
        print(f"recorded {len(records)} prompts of {args.reference} into {args.record_golden}", file=sys.stderr)
    return records, {"name": args.reference, "source": "engine", "versions": versions}


def _check_prompt_ids(golden: Golden, inputs: tuple[SuiteInput, ...], path: Path) -> None:
    recorded = {r.prompt_id: r.prompt_ids for r in golden.records}
    for item in inputs:
        if recorded.get(item.prompt_id) != item.prompt.token_ids:
            raise GoldenMismatch(f"prompt {item.prompt_id!r} tokenizes differently from the golden file {path}; "
                                 "the tokenizer or the suite changed: record a new golden file")


def _loaded(spec: str, model: ModelUnderTest) -> Backend:
    backend = create_backend(spec, model.sources)
    backend.load()
    return backend


def run_matrix(suite: Suite, model: ModelUnderTest, reference: dict, references, inputs, specs: list[str],
               table: ToleranceTable) -> MatrixReport:
    results = []
    for spec in specs:
        backend = _loaded(spec, model)
        try:
            results.append(compare_candidate(backend, reference["name"], inputs, references,
                                             suite.top_logprobs, table))
        finally:
            backend.unload()
    return MatrixReport(
        {"name": suite.name, "version": suite.version, "sha256": suite.sha256, "path": suite.path},
        {"name": model.name, "sha256": model.sha256}, reference, table.path, tuple(results))


def _write(report: MatrixReport, args: argparse.Namespace) -> int:
    import json

    markdown = to_markdown(report)
    if args.json:
        args.json.write_text(json.dumps(to_json(report), indent=1, ensure_ascii=False))
    if args.markdown:
        args.markdown.write_text(markdown)
    if report.candidates:
        print(markdown)
    for violation in report.violations:
        print(f"mcp2026: tolerance violated: {violation}", file=sys.stderr)
    return 0 if report.passed else 1
