"""Golden files: the reference's outputs for one suite on one model, to compare against later
without the reference engine installed.

JSON: the format name and version, the model's sha256 (of the GGUF every engine loads), the
suite's name, version and sha256, the reference engine's name and versions, k, and per prompt
its token ids, the greedy continuation and the top-k log-probabilities at every
teacher-forced position. Reading one for another model is a clear error, never a silent
comparison of unrelated outputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mcp.backends.base import TopLogprobs
from mcp.base.errors import ConfigError
from mcp.ops.consistency.metrics import ReferenceRecord
from mcp.ops.consistency.suite import Suite

FORMAT = "mcp2026-consistency-golden"
VERSION = 1


class GoldenMismatch(ConfigError):
    """A golden file was recorded for another model or suite."""


@dataclass(frozen=True)
class Golden:
    reference: str
    versions: dict[str, str]
    model_sha256: str
    model_name: str
    suite: str
    suite_version: int
    suite_sha256: str
    top_k: int
    records: tuple[ReferenceRecord, ...]


def write_golden(path: Path, golden: Golden) -> None:
    data = {"format": FORMAT, "version": VERSION, "reference": golden.reference, "versions": golden.versions,
            "model": {"name": golden.model_name, "sha256": golden.model_sha256},
            "suite": {"name": golden.suite, "version": golden.suite_version, "sha256": golden.suite_sha256},
            "top_k": golden.top_k, "records": [_record_json(r) for r in golden.records]}
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False))


def _record_json(record: ReferenceRecord) -> dict:
    return {"id": record.prompt_id, "prompt_ids": list(record.prompt_ids), "greedy_ids": list(record.greedy_ids),
            "top_ids": [list(t.token_ids) for t in record.top],
            "top_logprobs": [[round(p, 6) for p in t.logprobs] for t in record.top]}


def read_golden(path: Path) -> Golden:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read the golden file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"the golden file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ConfigError(f"{path} is not a version-{VERSION} golden file ({FORMAT}); record one with --record-golden")
    try:
        return _golden(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"the golden file {path} is incomplete or damaged ({exc!r}); record it again") from None


def _golden(data: dict) -> Golden:
    records = tuple(_record(r) for r in data["records"])
    return Golden(data["reference"], dict(data["versions"]), data["model"]["sha256"], data["model"]["name"],
                  data["suite"]["name"], int(data["suite"]["version"]), data["suite"]["sha256"], int(data["top_k"]),
                  records)


def _record(data: dict) -> ReferenceRecord:
    top = tuple(TopLogprobs(tuple(map(int, ids)), tuple(map(float, lps)))
                for ids, lps in zip(data["top_ids"], data["top_logprobs"], strict=True))
    return ReferenceRecord(data["id"], tuple(data["prompt_ids"]), tuple(data["greedy_ids"]), None, top)


def check_golden(golden: Golden, path: Path, model_sha256: str, suite: Suite) -> None:
    """Refuse a golden file recorded for another model, or another version of the suite."""
    if golden.model_sha256 != model_sha256:
        raise GoldenMismatch(
            f"the golden file {path} was recorded for model {golden.model_name} with sha256 {golden.model_sha256}, "
            f"but this model's sha256 is {model_sha256}; record a new golden file with --record-golden")
    if (golden.suite, golden.suite_version) != (suite.name, suite.version):
        raise GoldenMismatch(
            f"the golden file {path} holds suite {golden.suite!r} version {golden.suite_version}, not "
            f"{suite.name!r} version {suite.version}; use that suite or record a new golden file")
