"""Load and check the compliance data: ``clauses/*.yaml`` shipped in the package.

``concepts.yaml`` and ``controls.yaml`` hold the concepts and controls; every other ``.yaml``
file is one framework and its clauses. Every problem (a missing field, a duplicate id, an
unknown concept, control or evidence query) is collected and raised together as one
``ComplianceDataError``, each line naming the file and the id.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

from mcp.governance.compliance.errors import ComplianceDataError
from mcp.governance.compliance.graph import Clause, ComplianceGraph, Concept, Control, Framework

CLAUSES = Path(__file__).resolve().parent / "clauses"
SPECIAL = ("concepts.yaml", "controls.yaml")
CONCEPT_FIELDS = ("id", "title", "description")
CONTROL_FIELDS = ("id", "title", "description", "satisfies", "evidence")
CLAUSE_FIELDS = ("id", "article", "title", "gist", "source", "concepts")
FRAMEWORK_FIELDS = ("id", "title", "source")


class _Problems:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, file: Path, where: str, message: str) -> None:
        self.lines.append(f"{file.name}: {where}: {message}")


def load_graph(folder: str | Path = CLAUSES, known_queries: Collection[str] | None = None) -> ComplianceGraph:
    """The graph from ``folder``; ``known_queries`` defaults to the evidence queries there are."""
    if known_queries is None:
        from mcp.governance.compliance.queries import EVIDENCE_QUERIES
        known_queries = EVIDENCE_QUERIES
    folder = Path(folder)
    problems = _Problems()
    concepts = {c.id: c for c in _items(folder / "concepts.yaml", "concepts", CONCEPT_FIELDS, _concept, problems)}
    controls = {c.id: c for c in _items(folder / "controls.yaml", "controls", CONTROL_FIELDS, _control, problems)}
    for control in controls.values():
        _check_refs(folder / "controls.yaml", f"control {control.id}", "satisfies", control.satisfies, concepts,
                    "concept", problems)
        if control.evidence not in known_queries:
            problems.add(folder / "controls.yaml", f"control {control.id}",
                         f"evidence query {control.evidence!r} does not exist "
                         f"(known: {', '.join(sorted(known_queries))})")
    frameworks, clauses = _frameworks(folder, concepts, problems)
    if problems.lines:
        raise ComplianceDataError(f"{folder}: {len(problems.lines)} problem(s) in the compliance data\n  "
                                  + "\n  ".join(problems.lines))
    return ComplianceGraph(frameworks, clauses, concepts, controls)


def _frameworks(folder: Path, concepts: dict[str, Concept], problems: _Problems):
    frameworks: dict[str, Framework] = {}
    clauses: dict[str, Clause] = {}
    files = sorted((p for p in folder.glob("*.yaml") if p.name not in SPECIAL), key=_framework_order)
    if not files:
        problems.add(folder / "*.yaml", "frameworks", "no framework file (e.g. gdpr.yaml) in the folder")
    for file in files:
        data = _read(file, problems)
        head = data.get("framework") if isinstance(data, dict) else None
        if not _has_fields(head, FRAMEWORK_FIELDS, file, "framework", problems):
            continue
        if head["id"] in frameworks:
            problems.add(file, f"framework {head['id']}", "duplicate framework id (another file has it too)")
        framework = frameworks.setdefault(head["id"], Framework(head["id"], head["title"], head["source"]))
        for clause in _items(file, "clauses", CLAUSE_FIELDS, lambda d: _clause(d, framework.id), problems, data):
            if clause.id in clauses:
                problems.add(file, f"clause {clause.id}", "duplicate clause id")
            _check_refs(file, f"clause {clause.id}", "concepts", clause.concepts, concepts, "concept", problems)
            if not clause.concepts and clause.not_applicable is None:
                problems.add(file, f"clause {clause.id}", "maps to no concept; list its concepts or say why it is "
                             "not_applicable")
            clauses[clause.id] = clause
    return frameworks, clauses


def _framework_order(file: Path) -> tuple[int, str]:
    """Frameworks come in reports in the order their ``framework.order`` says, then by file name."""
    try:
        order = yaml.safe_load(file.read_text(encoding="utf-8"))["framework"]["order"]
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError):
        order = None
    return (order if isinstance(order, int) else 1 << 30, file.name)


def _items(file: Path, key: str, fields: tuple[str, ...], build, problems: _Problems, data: Any = None) -> list:
    data = _read(file, problems) if data is None else data
    entries = data.get(key) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        problems.add(file, key, f"missing: the file needs a top-level list '{key}'")
        return []
    built, seen = [], set()
    for index, entry in enumerate(entries):
        where = f"{key}[{index}]" + (f" ({entry['id']})" if isinstance(entry, dict) and "id" in entry else "")
        if not _has_fields(entry, fields, file, where, problems):
            continue
        if entry["id"] in seen:
            problems.add(file, f"{key[:-1]} {entry['id']}", f"duplicate {key[:-1]} id")
            continue
        seen.add(entry["id"])
        built.append(build(entry))
    return built


def _read(file: Path, problems: _Problems) -> Any:
    try:
        return yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.add(file, "file", "missing")
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problems.add(file, "file", f"not readable YAML ({exc})")
    return None


def _has_fields(entry: Any, fields: tuple[str, ...], file: Path, where: str, problems: _Problems) -> bool:
    if not isinstance(entry, dict):
        problems.add(file, where, "must be a mapping")
        return False
    missing = [f for f in fields if entry.get(f) is None or entry.get(f) == ""]
    if missing:
        problems.add(file, where, f"missing field(s) {', '.join(missing)}")
    lists = [f for f in ("concepts", "satisfies") if f in fields and f in entry and not isinstance(entry[f], list)]
    if lists:
        problems.add(file, where, f"{', '.join(lists)} must be a list")
    return not missing and not lists


def _check_refs(file: Path, where: str, field: str, refs: tuple[str, ...], known: dict, kind: str,
                problems: _Problems) -> None:
    for ref in refs:
        if ref not in known:
            problems.add(file, where, f"{field}: unknown {kind} {ref!r} (define it in {kind}s.yaml)")


def _concept(entry: dict) -> Concept:
    return Concept(str(entry["id"]), str(entry["title"]), str(entry["description"]))


def _control(entry: dict) -> Control:
    return Control(str(entry["id"]), str(entry["title"]), str(entry["description"]),
                   tuple(str(c) for c in entry["satisfies"]), str(entry["evidence"]))


def _clause(entry: dict, framework: str) -> Clause:
    reason = entry.get("not_applicable")
    return Clause(str(entry["id"]), framework, str(entry["article"]), str(entry["title"]), str(entry["gist"]),
                  str(entry["source"]), tuple(str(c) for c in entry["concepts"]),
                  str(reason) if reason else None)
