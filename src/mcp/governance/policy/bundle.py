"""A policy bundle: a folder of ``.rego`` modules and ``data.json``, compiled once per version.

The version is the sha256 of every file's relative path and bytes, so the audit trail can
say which policies decided. ``*_test.rego`` modules are the bundle's unit tests: they are
left out of the serving bundle and run by ``policy.testing.run_rego_tests``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import regopy

from mcp.governance.errors import PolicyError

# The engine's own module: gathers each stage's sets into one document, empty when a bundle
# has no rule for them, so one compiled entry point answers a whole stage.
DECISION_MODULE = """package mcp.decision
import rego.v1

input_stage := {"deny": [d | some d in data.mcp.input.deny], "redact": [d | some d in data.mcp.input.redact],
                "reroute": [d | some d in data.mcp.input.reroute]}
output_stage := {"deny": [d | some d in data.mcp.output.deny], "redact": [d | some d in data.mcp.output.redact],
                 "reroute": []}
"""
ENTRYPOINTS = {"input": "mcp/decision/input_stage", "output": "mcp/decision/output_stage"}
SHIPPED = Path(__file__).resolve().parent.parent / "policies" / "default"


@dataclass(frozen=True)
class PolicySource:
    """The files of a bundle folder, read once."""

    folder: Path
    modules: dict[str, str]  # relative path -> Rego text (tests left out)
    tests: dict[str, str]
    data: dict
    version: str

    @classmethod
    def read(cls, folder: str | Path) -> PolicySource:
        folder = Path(folder)
        if not folder.is_dir():
            raise PolicyError(f"policy bundle {folder} is not a folder; point governance.policy.bundle at a "
                              f"folder of .rego files (the shipped one is {SHIPPED})")
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".rego", ".json"))
        texts = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in files}
        digest = hashlib.sha256()
        for name, text in texts.items():
            digest.update(f"{name}\0{len(text.encode())}\0".encode() + text.encode())
        modules = {n: t for n, t in texts.items() if n.endswith(".rego") and not n.endswith("_test.rego")}
        tests = {n: t for n, t in texts.items() if n.endswith("_test.rego")}
        if not modules:
            raise PolicyError(f"policy bundle {folder} has no .rego module")
        return cls(folder, modules, tests, _data(folder, texts), digest.hexdigest())


@dataclass(frozen=True)
class CompiledPolicy:
    source: PolicySource
    bundle: regopy.Bundle

    @property
    def version(self) -> str:
        return self.source.version


def compile_policy(source: PolicySource, extra_entrypoints: tuple[str, ...] = (), with_tests: bool = False,
                   data: dict | None = None) -> CompiledPolicy:
    """Parse and plan every module once; a Rego error is a PolicyError naming the file."""
    interpreter = regopy.Interpreter()
    modules = {**source.modules, **(source.tests if with_tests else {}), "mcp_decision.rego": DECISION_MODULE}
    try:
        interpreter.add_data(source.data if data is None else data)
        for name, text in modules.items():
            interpreter.add_module(name, text)
        bundle = interpreter.build(None, [*ENTRYPOINTS.values(), *extra_entrypoints])
    except regopy.RegoError as exc:
        raise PolicyError(f"policy bundle {source.folder} does not compile: {_rego_message(exc)}") from None
    if not bundle.ok():
        raise PolicyError(f"policy bundle {source.folder} does not compile (rego-cpp gave no bundle)")
    return CompiledPolicy(source, bundle)


def _data(folder: Path, texts: dict[str, str]) -> dict:
    data: dict = {}
    for name, text in texts.items():
        if not name.endswith(".json"):
            continue
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PolicyError(f"{folder / name}: not valid JSON ({exc})") from None
        if not isinstance(loaded, dict):
            raise PolicyError(f"{folder / name}: the data document must be a JSON object")
        data.update(loaded)
    return data


def _rego_message(exc: regopy.RegoError) -> str:
    """rego-cpp's error tree, as the lines that say what and where."""
    text = str(exc)
    messages = re.findall(r"\(errormsg \d+:([^)]*)\)", text)
    places = re.findall(r"\(error \d+:([^|\s]+)\|(\d+)", text)
    found = [f"{place[0]}: {message}" for place, message in zip(places, messages)]
    return "; ".join(found) or text.strip().splitlines()[0]
