"""What the registry hands out: frozen snapshots, never live ORM rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp.gateway.registry.schema import ChangeRow, DeploymentRow, VersionRow
from mcp.gateway.registry.stages import Stage


@dataclass(frozen=True)
class ArtifactMetadata:
    """What an importer read from a model artifact, in one schema for every format."""

    uri: str  # file:///absolute/path
    format: str  # "mcp" | "gguf" | "hf" | "onnx" | "triton"
    sha256: str  # of the file; of a folder: see hf_source.folder_sha256
    size_bytes: int
    name: str  # a suggested model name (header, metadata or file name)
    architecture: str | None = None
    parameter_count: int | None = None
    quantization: str | None = None
    context_length: int | None = None
    license: str | None = None
    lineage: dict[str, Any] = field(default_factory=dict)
    base_model: str | None = None
    source_sha256: str | None = None  # of what the artifact was compiled from
    datasets: tuple[dict[str, Any], ...] = ()  # data lineage: name, license, sha256, source, preprocessing
    signature_status: str = "unsigned"  # "signed" when a detached signature lies beside it


@dataclass(frozen=True)
class ModelVersion:
    name: str
    version: str
    stage: Stage
    artifact_uri: str
    format: str
    sha256: str
    size_bytes: int
    architecture: str | None
    parameter_count: int | None
    quantization: str | None
    context_length: int | None
    license: str | None
    signature_status: str
    lineage: dict[str, Any]
    created_at: datetime
    created_by: str
    base_model: str | None = None
    source_sha256: str | None = None
    datasets: tuple[dict[str, Any], ...] = ()

    @property
    def model_id(self) -> str:
        return f"{self.name}:{self.version}"

    @classmethod
    def from_row(cls, row: VersionRow) -> ModelVersion:
        return cls(
            name=row.model.name, version=row.version, stage=Stage(row.stage), artifact_uri=row.artifact_uri,
            format=row.format, sha256=row.sha256, size_bytes=row.size_bytes, architecture=row.architecture,
            parameter_count=row.parameter_count, quantization=row.quantization,
            context_length=row.context_length, license=row.license, signature_status=row.signature_status,
            lineage=dict(row.lineage or {}), created_at=as_utc(row.created_at), created_by=row.created_by,
            base_model=row.base_model, source_sha256=row.source_sha256, datasets=tuple(row.datasets or ()),
        )

    def summary(self) -> dict[str, Any]:
        """The fields a change-log entry records."""
        return {"model_id": self.model_id, "stage": self.stage.value, "sha256": self.sha256,
                "format": self.format, "artifact_uri": self.artifact_uri}


@dataclass(frozen=True)
class Deployment:
    model_id: str
    instance_pool: str
    role: str  # "stable" | "canary"
    traffic_percent: int
    status: str
    updated_at: datetime

    @classmethod
    def from_row(cls, row: DeploymentRow, model_id: str) -> Deployment:
        return cls(model_id, row.instance_pool, row.role, row.traffic_percent, row.status, as_utc(row.updated_at))


@dataclass(frozen=True)
class Change:
    id: int
    at: datetime
    actor: str
    action: str
    subject: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: ChangeRow) -> Change:
        return cls(row.id, as_utc(row.at), row.actor, row.action, row.subject, row.before, row.after)


def as_utc(moment: datetime) -> datetime:
    """SQLite gives naive datetimes back; everything stored is UTC."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def now() -> datetime:
    return datetime.now(UTC)
