"""``EvidenceContext``: what the evidence queries read, built from the real ``mcp-config.yaml``.

It holds the config and the report period, and opens the live parts the config names on
first use: the audit database (SQLite or PostgreSQL, migrated like the server does), the
policy bundle (compiled and checked like the server does, or the OPA server), the served
model files, the model registry when one is given. Queries never build their own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from mcp.base.errors import MCPError
from mcp.config.runtime import RuntimeConfig, load_config
from mcp.config.serving import GovernanceConfig, ServedModel
from mcp.governance.compliance.errors import ComplianceReportError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([hdw])$")
_UNIT_S = {"h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class ReportPeriod:
    """The span of audit records a report looks at; ``since_us`` None: from the first record."""

    until_us: int
    since_us: int | None = None

    @classmethod
    def parse(cls, since: str | None = None, period: str | None = None, now_s: float | None = None) -> ReportPeriod:
        """``since``: an ISO date or time (UTC unless it says); ``period``: ``30d``, ``12h``, ``2w``."""
        now_us = int((time.time() if now_s is None else now_s) * 1e6)
        if since and period:
            raise ComplianceReportError("give --since or --period, not both")
        if period:
            match = _DURATION.match(period.strip())
            if not match:
                raise ComplianceReportError(f"--period {period!r}: write a number and a unit h, d or w (e.g. 30d)")
            return cls(now_us, now_us - int(float(match[1]) * _UNIT_S[match[2]] * 1e6))
        if since:
            try:
                moment = datetime.fromisoformat(since)
            except ValueError:
                raise ComplianceReportError(f"--since {since!r}: write an ISO date or time, e.g. 2026-01-31 "
                                            "or 2026-01-31T08:00:00+01:00") from None
            moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
            since_us = int(moment.timestamp() * 1e6)
            if since_us > now_us:
                raise ComplianceReportError(f"--since {since} is in the future; give a time before now")
            return cls(now_us, since_us)
        return cls(now_us)

    def describe(self) -> str:
        start = iso_time(self.since_us) if self.since_us is not None else "the first record"
        return f"{start} to {iso_time(self.until_us)}"


def iso_time(at_us: int) -> str:
    return datetime.fromtimestamp(at_us / 1e6, timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ModelFileRef:
    """A served model and the file it resolves to (None: not found where the server would look)."""

    model: ServedModel
    path: Path | None


class VersionFacts(Protocol):
    """What the lineage control reads of one registry version (the gateway's records have it)."""

    model_id: str
    lineage: Any


RegistryVersions = Callable[[], Sequence[VersionFacts]]
"""Reads the model registry's versions. The command line builds it from ``--registry``: the
registry is the gateway's, a floor above governance, so governance takes the reading as given."""


class EvidenceContext:
    """The config, the period, and the live parts (each opened once); ``close()`` releases them."""

    def __init__(self, config: RuntimeConfig, source: str, period: ReportPeriod,
                 registry_versions: RegistryVersions | None = None) -> None:
        self.config, self.source, self.period = config, source, period
        self.registry_versions = registry_versions
        self._opened: dict[str, Any] = {}  # name -> the open part, or the MCPError opening it raised

    @classmethod
    def from_config_file(cls, path: str | Path, period: ReportPeriod | None = None,
                         registry_versions: RegistryVersions | None = None) -> EvidenceContext:
        return cls(load_config(path), str(path), period or ReportPeriod.parse(), registry_versions)

    @property
    def governance(self) -> GovernanceConfig | None:
        return self.config.serving.governance

    @property
    def audit_on(self) -> bool:
        return self.governance is not None and self.governance.audit

    @property
    def key_file(self) -> Path:
        from mcp.governance.audit.keys import default_key_file

        return Path(self.governance.audit_key_file) if self.governance and self.governance.audit_key_file \
            else default_key_file()

    @property
    def audit_engine(self):
        """The audit database's engine (migrated to the newest revision, as the server does).
        A configured SQLite file that does not exist is an AuditError: nothing was recorded."""
        return self._once("audit_engine", self._open_audit_engine)

    @property
    def policy_engine(self):
        """The policy engine the server would run: the bundle (checked and compiled) or the OPA server."""
        return self._once("policy_engine", self._open_policy_engine)

    def _once(self, name: str, opener):
        """Open a part on first use; a failure is kept and raised again, not retried per query."""
        if name not in self._opened:
            try:
                self._opened[name] = opener()
            except MCPError as exc:
                self._opened[name] = exc
        if isinstance(self._opened[name], MCPError):
            raise self._opened[name]
        return self._opened[name]

    def _open_audit_engine(self):
        from sqlalchemy import make_url

        from mcp.governance.audit.database import default_url, open_audit_engine
        from mcp.governance.errors import AuditError

        url = self.governance.audit_url or default_url()
        parsed = make_url(url) if "://" in url else None
        if parsed is not None and parsed.get_backend_name() == "sqlite" and parsed.database \
                and not Path(parsed.database).expanduser().exists():
            raise AuditError(f"audit database {parsed.database} does not exist: the server has recorded nothing "
                             "there; check serving.governance.audit_url")
        return open_audit_engine(url, self.governance.audit_sqlite_sync)

    def _open_policy_engine(self):
        from mcp.governance.policy.bundle import SHIPPED
        from mcp.governance.policy.engine import RegoPolicyEngine
        from mcp.governance.policy.opa_rest import OPAPolicyEngine

        if self.governance.opa_url:
            return OPAPolicyEngine(self.governance.opa_url)
        return RegoPolicyEngine(self.governance.policy_bundle or SHIPPED, self.governance.policy_poll_s)

    def model_files(self) -> list[ModelFileRef]:
        """Each served model's file, looked up as the server does (model_dir, cwd, the cache)."""
        from mcp.compiler import catalog

        refs = []
        for model in self.config.serving.models:
            path = Path(model.source).expanduser()
            candidates = [path] if path.is_absolute() else [self.config.model_dir / path, Path.cwd() / path]
            name = path.name[:-len(".mcp")] if path.name.endswith(".mcp") else path.name
            candidates.append(catalog.compiled_path(name, self.config.cache_dir))
            refs.append(ModelFileRef(model, next((c.resolve() for c in candidates if c.is_file()), None)))
        return refs

    def close(self) -> None:
        engine, policy = self._opened.pop("audit_engine", None), self._opened.pop("policy_engine", None)
        if engine is not None and not isinstance(engine, MCPError):
            engine.dispose()
        if policy is not None and not isinstance(policy, MCPError):
            policy.close()

    def __enter__(self) -> EvidenceContext:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
