"""What a launch measures: the runtime's code, the config, the policy bundle, the model files.

Each function returns ``(name, sha256 hex)`` for ``MeasurementLog.extend``. The code digest is
computed once per process (it hashes a few hundred files, tens of milliseconds).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from mcp.config.runtime import RuntimeConfig
from mcp.modelfile.hashing import file_sha256

DISTRIBUTION = "mcp2026"
# Where the server listens differs between the replicas of one deployment and does not change what
# it computes; measuring it would give every replica its own reference.
UNMEASURED_SERVING_KEYS = ("host", "port", "grpc_port")


def code_measurement() -> tuple[str, str]:
    """``("mcp2026 VERSION", digest)`` over the installed files of the ``mcp2026`` distribution."""
    return _code_measurement()


@functools.cache
def _code_measurement() -> tuple[str, str]:
    files = code_files()
    digest = hashlib.sha256()
    for relative, path in files:
        digest.update(f"{relative}\0{file_sha256(path)}\n".encode())
    return f"{DISTRIBUTION} {_version()} ({len(files)} files)", digest.hexdigest()


def code_files() -> list[tuple[str, Path]]:
    """``(path relative to site-packages or src/, absolute path)`` of every code and data file of
    the ``mcp`` packages this distribution installs, sorted; caches and bytecode left out.

    A regular install lists them in its RECORD; an editable one lists only a path hook, so the
    files are found under the source folder this module was imported from."""
    try:
        listed = metadata.distribution(DISTRIBUTION).files or []
    except metadata.PackageNotFoundError:
        listed = []
    installed = [(f.as_posix(), Path(f.locate()).resolve()) for f in listed
                 if f.parts and f.parts[0] == "mcp" and _is_code(f.as_posix())]
    if installed:
        return sorted(installed)
    source_root = Path(__file__).resolve().parents[3]  # .../src, holding the mcp namespace portion
    return sorted((p.relative_to(source_root).as_posix(), p) for p in (source_root / "mcp").rglob("*")
                  if p.is_file() and _is_code(p.relative_to(source_root).as_posix()))


def _is_code(relative: str) -> bool:
    return "__pycache__" not in relative and not relative.endswith((".pyc", ".pyo"))


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def config_measurement(config: RuntimeConfig, source: str | None) -> tuple[str, str]:
    """``(name, digest)`` of the config's canonical form: the resolved values as sorted JSON, so
    comments, key order and defaults written out or left implicit do not change it."""
    name = Path(source).name if source else "defaults"
    return name, hashlib.sha256(canonical_config(config)).hexdigest()


def canonical_config(config: RuntimeConfig) -> bytes:
    serving = {k: v for k, v in _plain(config.serving).items() if k not in UNMEASURED_SERVING_KEYS}
    plain = {**_plain(config), "serving": serving}
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _plain(value: Any) -> Any:
    """JSON-ready: dataclasses as dicts, enums by name, paths as strings, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, Path):
        return str(value)
    return value


def policy_measurement(folder: str | Path) -> tuple[str, str]:
    """``(folder, version)``: the bundle's version is already the sha256 of its files."""
    from mcp.governance.policy.bundle import PolicySource

    return str(folder), PolicySource.read(folder).version


def model_measurement(key: str, path: Path) -> tuple[str, str]:
    """``("name:version", sha256 of the .mcp file)``."""
    return key, file_sha256(path)
