"""``find_records``: audit records by time, tenant, status, policy action and model, newest first.

What the console's audit page lists. It reads the chain's table as it is (no hash check: that is
``verify``'s job) and hands back plain frozen rows; the decisions stay the canonical JSON list the
chain hashed, parsed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select

from mcp.base.errors import InvalidRequestError
from mcp.governance.audit import schema

MAX_LIMIT = 500
ACTIONS = ("allow", "deny", "redact", "reroute")


@dataclass(frozen=True)
class RecordQuery:
    """Which records: every field None means any."""

    tenant: str | None = None
    status: str | None = None  # ok | denied | stopped | cancelled | error:<kind>
    action: str | None = None  # a policy decision's action: allow | deny | redact | reroute
    model: str | None = None
    since_us: int | None = None
    until_us: int | None = None
    limit: int = 100

    def check(self) -> RecordQuery:
        """This query, or an InvalidRequestError that says which field is wrong."""
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidRequestError(f"limit {self.limit} is out of range; give 1 to {MAX_LIMIT}")
        if self.action is not None and self.action not in ACTIONS:
            raise InvalidRequestError(f"decision {self.action!r} is not a policy action; "
                                      f"give one of {', '.join(ACTIONS)}")
        if self.since_us is not None and self.until_us is not None and self.since_us > self.until_us:
            raise InvalidRequestError("since is after until; give a time range whose start comes first")
        return self


@dataclass(frozen=True)
class FoundRecord:
    seq: int
    at_us: int
    request_id: str
    tenant: str
    subject: str | None
    model: str | None
    model_version: str | None
    route: str
    status: str
    decisions: tuple[dict[str, Any], ...]
    prompt_tokens: int
    completion_tokens: int
    latency_us: int
    hash: str


def find_records(engine: Engine, query: RecordQuery) -> list[FoundRecord]:
    """The newest ``query.limit`` records that match ``query``."""
    query = query.check()
    table = schema.records
    statement = select(table).order_by(table.c.seq.desc())
    for column, value in (("tenant", query.tenant), ("status", query.status), ("model", query.model)):
        if value is not None:
            statement = statement.where(table.c[column] == value)
    if query.since_us is not None:
        statement = statement.where(table.c.at_us >= query.since_us)
    if query.until_us is not None:
        statement = statement.where(table.c.at_us <= query.until_us)
    if query.action is not None:  # canonical JSON: the action's bytes are fixed (chain.canonical_json)
        statement = statement.where(table.c.decisions.contains(f'"action":"{query.action}"'))
    with engine.connect() as connection:
        rows = connection.execute(statement.limit(query.limit)).all()
    return [_found(row) for row in rows]


def _found(row) -> FoundRecord:
    return FoundRecord(row.seq, row.at_us, row.request_id, row.tenant, row.subject, row.model, row.model_version,
                       row.route, row.status, tuple(json.loads(row.decisions)), row.prompt_tokens,
                       row.completion_tokens, row.latency_us, row.hash)
