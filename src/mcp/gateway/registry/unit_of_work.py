"""One registry transaction: an ORM session that commits or rolls back as a whole, with
database failures turned into ``RegistryError``s and the change log written in the same
transaction as the change it records."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from mcp.gateway.errors import UnknownModelError, UnknownVersionError
from mcp.gateway.registry.database import unavailable
from mcp.gateway.registry.records import now
from mcp.gateway.registry.schema import ChangeRow, ModelRow, VersionRow


class UnitOfWork:
    def __init__(self, session: Session, actor: str) -> None:
        self.session = session
        self.actor = actor

    def record(self, action: str, subject: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        self.session.add(ChangeRow(at=now(), actor=self.actor, action=action, subject=subject,
                                   before=before, after=after))

    def model(self, name: str, lock: bool = False) -> ModelRow:
        query = select(ModelRow).where(ModelRow.name == name)
        row = self.session.scalars(query.with_for_update() if lock else query).one_or_none()
        if row is None:
            raise UnknownModelError(f"no model named {name!r} in the registry; `mcp2026 registry list` shows them")
        return row

    def version(self, name: str, version: str, lock: bool = False) -> VersionRow:
        model = self.model(name, lock=lock)
        query = select(VersionRow).where(VersionRow.model_id == model.id, VersionRow.version == version)
        row = self.session.scalars(query.with_for_update() if lock else query).one_or_none()
        if row is None:
            known = ", ".join(v.version for v in model.versions) or "none"
            raise UnknownVersionError(f"model {name!r} has no version {version!r} (versions: {known})")
        return row

    def model_or_create(self, name: str) -> ModelRow:
        """The model row, created (and logged) if missing; safe against a concurrent creator."""
        existing = self.session.scalars(select(ModelRow).where(ModelRow.name == name)).one_or_none()
        if existing is not None:
            return existing
        try:
            with self.session.begin_nested():
                row = ModelRow(name=name, created_at=now(), created_by=self.actor)
                self.session.add(row)
                self.session.flush()
        except IntegrityError:  # another writer created it first; its row is committed now
            return self.session.scalars(select(ModelRow).where(ModelRow.name == name)).one()
        self.record("model.create", name, None, {"name": name})
        return row


@contextmanager
def unit_of_work(engine: Engine, actor: str) -> Iterator[UnitOfWork]:
    try:
        with Session(engine, expire_on_commit=False) as session, session.begin():
            yield UnitOfWork(session, actor)
    except IntegrityError:
        raise
    except DBAPIError as exc:
        raise unavailable(engine, exc) from None
