"""Data lineage declared at compile time: ``--lineage lineage.yaml`` or ``--dataset`` flags.

    base_model: HuggingFaceTB/SmolLM2-135M      # optional: overrides what the source says
    license: apache-2.0                         # optional: the model's license
    datasets:
      - name: smoltalk
        source: https://example.org/smoltalk    # optional: where it came from
        license: apache-2.0                     # optional
        sha256: 3f2a...                         # optional: given, or computed from path:
        path: data/smoltalk.parquet             # optional: a local file, hashed here
        preprocessing: [dedup, language-filter]

A ``path`` is hashed; when ``sha256`` is also given the two must agree. Paths resolve against
the YAML file's folder. Any mistake is a ``ConfigError`` naming the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pydantic
import yaml

from mcp.base.errors import ConfigError
from mcp.base.sections import StrictSection
from mcp.modelfile.hashing import file_sha256
from mcp.modelfile.spec import Dataset

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
DATASET_FLAG_KEYS = ("name", "license", "sha256", "source", "path")


class DatasetEntry(StrictSection):
    name: str = pydantic.Field(min_length=1)
    license: str | None = None
    sha256: str | None = None
    source: str | None = None
    path: str | None = None
    preprocessing: list[str] = []


class LineageFile(StrictSection):
    base_model: str | None = None
    license: str | None = None
    datasets: list[DatasetEntry] = []


@dataclass(frozen=True)
class DeclaredLineage:
    """What the compiler adds to the lineage it records."""

    datasets: tuple[Dataset, ...] = ()
    base_model: str | None = None
    license: str | None = None


def load_lineage_file(path: Path) -> DeclaredLineage:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"lineage file {path} cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"lineage file {path} is not valid YAML: {exc}") from None
    try:
        parsed = LineageFile.model_validate(data or {})
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"lineage file {path}: {problems}") from None
    base = Path(path).resolve().parent
    datasets = tuple(_dataset(entry, base, f"{path}: datasets[{i}]") for i, entry in enumerate(parsed.datasets))
    return DeclaredLineage(datasets, parsed.base_model, parsed.license)


def parse_dataset_flag(text: str) -> Dataset:
    """``--dataset name=X,license=Y,sha256=Z,source=U,path=P`` (only name is required)."""
    fields = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in DATASET_FLAG_KEYS:
            raise ConfigError(f"--dataset {text!r}: {part!r} is not KEY=VALUE with KEY one of "
                              f"{', '.join(DATASET_FLAG_KEYS)} (preprocessing steps go in a --lineage file)")
        fields[key.strip()] = value.strip()
    if not fields.get("name"):
        raise ConfigError(f"--dataset {text!r}: give at least name=...")
    return _dataset(DatasetEntry(**fields), Path.cwd(), f"--dataset {fields['name']}")


def _dataset(entry: DatasetEntry, base: Path, where: str) -> Dataset:
    digest = entry.sha256.lower() if entry.sha256 else None
    if digest is not None and not _SHA256.match(digest):
        raise ConfigError(f"{where}.sha256: must be 64 hex digits (got {entry.sha256!r})")
    if entry.path:
        file = base / entry.path
        if not file.is_file():
            raise ConfigError(f"{where}.path: {file} is not a file; give the dataset file, or only its sha256")
        computed = file_sha256(file)
        if digest is not None and digest != computed:
            raise ConfigError(f"{where}: {file} has sha256 {computed}, not the declared {digest}")
        digest = computed
    return Dataset(entry.name, entry.license, digest, entry.source or entry.path, tuple(entry.preprocessing))
