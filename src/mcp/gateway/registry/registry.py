"""The model registry: models, their versions and stages, deployments, and the change log.

Every method is one transaction. Changes lock the model's row first (``SELECT ... FOR
UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already serializes writers), so
concurrent writers on the same model queue instead of racing, and each change writes its
change-log entry in the same transaction: a change and its entry land together or not at all.
"""

from __future__ import annotations

import getpass
import socket

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from mcp.gateway.errors import DuplicateVersionError, RegistryError, StageTransitionError, UnknownVersionError
from mcp.gateway.registry import migrate
from mcp.gateway.registry.database import create_registry_engine
from mcp.gateway.registry.records import ArtifactMetadata, Change, Deployment, ModelVersion, now
from mcp.gateway.registry.schema import ChangeRow, DeploymentRow, ModelRow, VersionRow
from mcp.gateway.registry.stages import EXCLUSIVE_STAGES, Stage, check_transition
from mcp.gateway.registry.unit_of_work import UnitOfWork, unit_of_work

DEPLOYMENT_ROLES = ("stable", "canary")


def default_actor() -> str:
    return f"{getpass.getuser()}@{socket.gethostname()}"


class Registry:
    """A model registry on one database. Use as a context manager, or call ``close()``."""

    def __init__(self, engine: Engine, actor: str | None = None) -> None:
        self.engine = engine
        self.actor = actor or default_actor()

    @classmethod
    def open(cls, url: str | None = None, actor: str | None = None, auto_migrate: bool = True) -> Registry:
        """Connect to ``url`` (default: ``database.default_url()``) and, unless told not to,
        bring its schema to the newest migration."""
        engine = create_registry_engine(url)
        if auto_migrate:
            migrate.upgrade(engine)
        return cls(engine, actor)

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    def register(self, artifact: ArtifactMetadata, name: str | None = None, version: str = "1",
                 stage: Stage = Stage.STAGING) -> ModelVersion:
        """Record a new version of ``name`` (default: the artifact's name), in ``stage``."""
        name = name or artifact.name
        try:
            with unit_of_work(self.engine, self.actor) as work:
                model = work.model_or_create(name)
                work.model(name, lock=True)
                row = self._insert_version(work, model, version, artifact)
                if stage != Stage.STAGING:
                    self.move(work, row, stage)
                return ModelVersion.from_row(row)
        except IntegrityError:
            raise DuplicateVersionError(f"{name}:{version} is already registered") from None

    def get(self, name: str, version: str) -> ModelVersion:
        with unit_of_work(self.engine, self.actor) as work:
            return ModelVersion.from_row(work.version(name, version))

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        """Every version (of ``name``, if given), by model name then registration order."""
        with unit_of_work(self.engine, self.actor) as work:
            query = select(VersionRow).join(ModelRow).options(selectinload(VersionRow.model))
            if name is not None:
                query = query.where(ModelRow.id == work.model(name).id)
            rows = work.session.scalars(query.order_by(ModelRow.name, VersionRow.id))
            return [ModelVersion.from_row(row) for row in rows]

    def in_stage(self, name: str, stage: Stage) -> ModelVersion:
        """The version of ``name`` now in ``stage`` (canary or production: there is at most one;
        staging: the newest)."""
        with unit_of_work(self.engine, self.actor) as work:
            model = work.model(name)
            query = select(VersionRow).where(VersionRow.model_id == model.id, VersionRow.stage == stage.value)
            row = work.session.scalars(query.order_by(VersionRow.id.desc())).first()
            if row is None:
                raise UnknownVersionError(f"model {name!r} has no version in {stage.value}")
            return ModelVersion.from_row(row)

    def promote(self, name: str, version: str, stage: Stage) -> ModelVersion:
        """Move a version to ``stage``. Promoting to production archives the previous
        production version; a second canary is refused while one is live."""
        with unit_of_work(self.engine, self.actor) as work:
            work.model(name, lock=True)
            row = work.version(name, version)
            self.move(work, row, stage)
            return ModelVersion.from_row(row)

    def archive(self, name: str, version: str) -> ModelVersion:
        return self.promote(name, version, Stage.ARCHIVED)

    def deploy(self, name: str, version: str, instance_pool: str, role: str = "stable",
               traffic_percent: int = 100, status: str = "active") -> Deployment:
        """Create or update the deployment of a version on an instance pool."""
        if role not in DEPLOYMENT_ROLES or not 0 <= traffic_percent <= 100:
            raise RegistryError(f"deployment role must be one of {DEPLOYMENT_ROLES} and traffic_percent "
                                f"0..100; got {role!r}, {traffic_percent}")
        with unit_of_work(self.engine, self.actor) as work:
            work.model(name, lock=True)
            row = work.version(name, version)
            return upsert_deployment(work, row, instance_pool, role, traffic_percent, status)

    def deployments(self, name: str, version: str) -> list[Deployment]:
        with unit_of_work(self.engine, self.actor) as work:
            row = work.version(name, version)
            query = select(DeploymentRow).where(DeploymentRow.version_id == row.id).order_by(DeploymentRow.id)
            return [Deployment.from_row(d, f"{name}:{version}") for d in work.session.scalars(query)]

    def changes(self, subject: str | None = None, limit: int | None = None) -> list[Change]:
        """The change log, oldest first; ``subject`` is a model name or ``name:version``."""
        with unit_of_work(self.engine, self.actor) as work:
            query = select(ChangeRow).order_by(ChangeRow.id)
            if subject is not None:
                query = query.where((ChangeRow.subject == subject) | ChangeRow.subject.startswith(f"{subject}:"))
            rows = list(work.session.scalars(query))
            return [Change.from_row(row) for row in (rows[-limit:] if limit else rows)]

    def _insert_version(self, work: UnitOfWork, model: ModelRow, version: str,
                        artifact: ArtifactMetadata) -> VersionRow:
        if any(v.version == version for v in model.versions):
            raise DuplicateVersionError(f"{model.name}:{version} is already registered")
        row = VersionRow(
            model=model, version=version, stage=Stage.STAGING.value, artifact_uri=artifact.uri,
            format=artifact.format, sha256=artifact.sha256, size_bytes=artifact.size_bytes,
            architecture=artifact.architecture, parameter_count=artifact.parameter_count,
            quantization=artifact.quantization, context_length=artifact.context_length,
            license=artifact.license, signature_status=artifact.signature_status, lineage=dict(artifact.lineage),
            base_model=artifact.base_model, source_sha256=artifact.source_sha256,
            datasets=[dict(d) for d in artifact.datasets], created_at=now(), created_by=work.actor,
        )
        work.session.add(row)
        work.session.flush()
        work.record("version.add", f"{model.name}:{version}", None, ModelVersion.from_row(row).summary())
        return row

    def move(self, work: UnitOfWork, row: VersionRow, target: Stage) -> None:
        """Change a version's stage inside ``work`` (the rollout store moves versions in its own transactions)."""
        model_id = f"{row.model.name}:{row.version}"
        check_transition(model_id, Stage(row.stage), target)
        if target in EXCLUSIVE_STAGES:
            holder = _holder(work, row, target)
            if holder is not None and target == Stage.CANARY:
                raise StageTransitionError(
                    f"{row.model.name} already has a canary ({holder.version}); promote or archive it first")
            if holder is not None:
                self._set_stage(work, holder, Stage.ARCHIVED)
        self._set_stage(work, row, target)

    @staticmethod
    def _set_stage(work: UnitOfWork, row: VersionRow, target: Stage) -> None:
        before = ModelVersion.from_row(row).summary()
        row.stage = target.value
        work.session.flush()
        work.record("version.stage", f"{row.model.name}:{row.version}", before, ModelVersion.from_row(row).summary())


def _holder(work: UnitOfWork, row: VersionRow, stage: Stage) -> VersionRow | None:
    query = select(VersionRow).where(VersionRow.model_id == row.model_id, VersionRow.stage == stage.value)
    return work.session.scalars(query).one_or_none()


def upsert_deployment(work: UnitOfWork, row: VersionRow, pool: str, role: str, percent: int,
                       status: str) -> Deployment:
    subject = f"{row.model.name}:{row.version}"
    query = select(DeploymentRow).where(DeploymentRow.version_id == row.id, DeploymentRow.instance_pool == pool)
    deployment = work.session.scalars(query).one_or_none()
    before = None if deployment is None else _deployment_state(deployment)
    if deployment is None:
        deployment = DeploymentRow(version_id=row.id, instance_pool=pool, created_at=now())
        work.session.add(deployment)
    deployment.role, deployment.traffic_percent, deployment.status = role, percent, status
    deployment.updated_at = now()
    work.session.flush()
    work.record("deployment.set", subject, before, _deployment_state(deployment))
    return Deployment.from_row(deployment, subject)


def _deployment_state(row: DeploymentRow) -> dict[str, object]:
    return {"instance_pool": row.instance_pool, "role": row.role, "traffic_percent": row.traffic_percent,
            "status": row.status}
