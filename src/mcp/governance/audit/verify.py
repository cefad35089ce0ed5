"""``verify``: walk the chain and name every record that was edited, deleted, inserted or moved.

Each record is checked twice: its fields against its own hash (an edit), and its link to
its predecessor. A broken link is explained by what the hashes show: a predecessor that no
longer exists (deleted), a record nothing links to while its successor links past it
(inserted), a predecessor that sits elsewhere in the sequence (reordered). ``audit_head``
names the last record: a tail that was cut off shows there. What no chain can show is a
rewrite of the whole chain and head by someone holding the database: publish the head hash
that ``verify`` prints (a ticket, a transparency log) to anchor it outside.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine, func, select

from mcp.governance.audit import schema
from mcp.governance.audit.chain import HASHED_FIELDS, OPTIONAL_HASHED_FIELDS, record_hash


@dataclass(frozen=True)
class _Row:
    seq: int
    request_id: str
    prev_hash: str
    hash: str
    content_ok: bool


@dataclass
class VerifyReport:
    num_records: int = 0
    head_seq: int = 0
    head_hash: str = schema.GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(engine: Engine) -> VerifyReport:
    with engine.connect() as connection:
        anchor = connection.execute(select(schema.anchors.c.last_seq, schema.anchors.c.hash)
                                    .order_by(schema.anchors.c.id.desc()).limit(1)).first()
        head = connection.execute(select(schema.head.c.seq, schema.head.c.hash)).one()
        rows = [_row(r) for r in connection.execute(select(schema.records).order_by(schema.records.c.seq))]
    start_hash = anchor.hash if anchor is not None else schema.GENESIS
    report = VerifyReport(len(rows), head.seq, head.hash)
    report.problems += [f"record {r.seq} (request {r.request_id}) was edited: its fields no longer match its hash"
                        for r in rows if not r.content_ok]
    report.problems += _link_problems(rows, start_hash)
    report.problems += _head_problems(rows, head.seq, head.hash, start_hash)
    return report


def _row(record) -> _Row:
    fields = {name: getattr(record, name) for name in HASHED_FIELDS + OPTIONAL_HASHED_FIELDS}
    return _Row(record.seq, record.request_id, record.prev_hash, record.hash,
                record_hash(record.prev_hash, fields) == record.hash)


def _link_problems(rows: list[_Row], start_hash: str) -> list[str]:
    position = {row.hash: index for index, row in enumerate(rows)}
    linked_to = {row.prev_hash for row in rows}
    problems: list[str] = []
    for index, row in enumerate(rows):
        expected = rows[index - 1].hash if index else start_hash
        if row.prev_hash == expected:
            continue
        before = position.get(row.prev_hash)
        if before is None and row.prev_hash != start_hash:
            problems.append(_deleted(rows, index))
        elif before is not None and before > index:
            problems.append(f"record {row.seq} (request {row.request_id}) is out of order: it is chained after "
                            f"record {rows[before].seq} (request {rows[before].request_id}), which comes later")
        else:
            skipped = rows[(before + 1 if before is not None else 0):index]
            inserted = [r for r in skipped if r.hash not in linked_to]
            if inserted and len(inserted) == len(skipped):
                problems += [f"record {r.seq} (request {r.request_id}) was inserted: no record is chained to it "
                             f"and record {row.seq} links past it" for r in inserted]
            elif not any(rows[i].prev_hash == row.hash for i in range(index)):  # not already a reorder
                problems.append(f"record {row.seq} (request {row.request_id}) is out of order: its predecessor is "
                                f"record {rows[before].seq if before is not None else 'the start'}")
    return problems


def _deleted(rows: list[_Row], index: int) -> str:
    row = rows[index]
    previous = rows[index - 1].seq if index else None
    if previous is not None and row.seq - previous > 1:
        missing = f"record {previous + 1}" if row.seq - previous == 2 else f"records {previous + 1}-{row.seq - 1}"
        return f"{missing} deleted: record {row.seq} (request {row.request_id}) is chained to a record that is gone"
    return (f"a record before record {row.seq} (request {row.request_id}) was deleted or replaced: it is chained "
            "to a record that is gone")


def _head_problems(rows: list[_Row], head_seq: int, head_hash: str, start_hash: str) -> list[str]:
    last_seq, last_hash = (rows[-1].seq, rows[-1].hash) if rows else (0, start_hash)
    if last_hash == head_hash:
        return []
    if last_seq < head_seq:
        return [f"records after {last_seq} were deleted: the head says the last record is {head_seq}"]
    return [f"the last record is {last_seq}, but the head names record {head_seq} (hash {head_hash[:12]}): "
            "records at the end were added or replaced outside the log"]


def count_records(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(schema.records)).scalar_one()
