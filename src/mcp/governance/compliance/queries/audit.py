"""Evidence from the audit database: the chain, retention, erasures, exports, captures."""

from __future__ import annotations

import re
import time

from sqlalchemy import and_, func, select

from mcp.governance.audit import schema
from mcp.governance.compliance.context import EvidenceContext, iso_time
from mcp.governance.compliance.status import ControlResult, Status, result

SIX_MONTHS_DAYS = 183
PRUNE_SLACK_DAYS = 1.0  # the server prunes every 6 hours; a day older than the period means no prune ran
_PSEUDONYM = re.compile(r"^[0-9a-f]{32}$")


def audit_chain(context: EvidenceContext) -> ControlResult:
    from mcp.governance.audit.verify import verify

    if (off := _audit_off(context)) is not None:
        return off
    report = verify(context.audit_engine)
    in_period = _count(context, schema.records.c.seq)
    where = context.audit_engine.url.render_as_string(hide_password=True)
    head = f"head record {report.head_seq}, hash {report.head_hash}"
    if not report.ok:
        return result(Status.NOT_MET, f"audit chain in {where} FAILED verification: {len(report.problems)} problem(s)",
                      *report.problems[:10])
    if not in_period:
        return result(Status.PARTLY, f"audit chain in {where} verified ({report.num_records} records, {head}), but "
                                     f"it holds no record from {context.period.describe()}: did the server write here?")
    return result(Status.MET, f"audit chain in {where} verified: {report.num_records} records, {head}",
                  f"{in_period} record(s) from {context.period.describe()}")


def retention_schedule(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    days = context.governance.retention_days
    if days is None:
        return result(Status.NOT_MET, f"{context.source}: serving.governance.retention_days is not set: audit records "
                                      "are kept forever")
    oldest_us = _scalar(context, func.min(schema.records.c.at_us))
    pruned = _last_prune(context)
    facts = [f"retention_days: {days:g}; the server prunes older records at start and every 6 hours", pruned]
    if oldest_us is not None:
        age_days = (time.time() - oldest_us / 1e6) / 86400
        facts.append(f"the oldest record is from {iso_time(oldest_us)} ({age_days:.1f} days old)")
        if age_days > days + PRUNE_SLACK_DAYS:
            return result(Status.PARTLY, *facts, "records older than the retention period are still kept: no "
                          f"prune ran; is the server running? `mcp2026 audit prune --days {days:g}` prunes by hand")
    return result(Status.MET, *facts)


def retention_minimum(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    days = context.governance.retention_days
    if days is None:
        return result(Status.MET, "retention_days is not set: records are never pruned, so they are kept for more "
                                  f"than {SIX_MONTHS_DAYS} days")
    if days < SIX_MONTHS_DAYS:
        return result(Status.NOT_MET, f"{context.source}: serving.governance.retention_days is {days:g}, under the "
                                      f"{SIX_MONTHS_DAYS} days (six months) the law asks for")
    return result(Status.MET, f"retention_days {days:g}: records are kept at least {SIX_MONTHS_DAYS} days")


def erasures_honoured(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    with context.audit_engine.connect() as connection:
        erasures = connection.execute(select(schema.erasures).order_by(schema.erasures.c.id)).all()
        left = [_left_after(connection, erasure) for erasure in erasures]
    in_period = [e for e in erasures if context.period.since_us is None or e.at_us >= context.period.since_us]
    failed = [problem for problem in left if problem]
    if failed:
        return result(Status.NOT_MET, f"{len(failed)} of {len(erasures)} erasure(s) not honoured:", *failed)
    if not erasures:
        return result(Status.MET, "erasure by crypto-shredding is available (`mcp2026 audit erase --tenant T "
                                  "--subject ID`); the register holds no erasure yet")
    return result(Status.MET, f"{len(erasures)} erasure(s) registered ({len(in_period)} from "
                              f"{context.period.describe()}), every one honoured: no subject key and no capture "
                              "older than its erasure is left",
                  f"latest: subject {erasures[-1].subject} at {iso_time(erasures[-1].at_us)}")


def _left_after(connection, erasure) -> str | None:
    """What of the erased subject is older than its erasure and still there (None: nothing).
    An erasure limited to one tenant (a legacy pseudonym shared by tenants) covers that
    tenant's captures only; the key stays while other tenants' captures need it."""
    keys, captures, records = schema.subject_keys.c, schema.captures.c, schema.records.c
    key = None
    if erasure.tenant is None:
        key = connection.execute(select(keys.created_us).where(
            and_(keys.subject == erasure.subject, keys.created_us <= erasure.at_us))).first()
    with_records = schema.captures.join(schema.records, records.seq == captures.seq)
    scope = [records.tenant == erasure.tenant] if erasure.tenant is not None else []
    captures = connection.execute(select(func.count()).select_from(with_records).where(
        and_(captures.subject == erasure.subject, records.at_us <= erasure.at_us, *scope))).scalar_one()
    if key is None and not captures:
        return None
    what = ", ".join(filter(None, ["its key still exists" if key is not None else "",
                                   f"{captures} capture(s) still readable" if captures else ""]))
    return f"subject {erasure.subject} erased at {iso_time(erasure.at_us)}: {what}"


def subject_export(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    if not context.key_file.is_file():
        return result(Status.NOT_MET, f"audit key file {context.key_file} does not exist: subjects cannot be looked up "
                                      "by user id nor captures decrypted; set serving.governance.audit_key_file")
    subjects = _count(context, schema.records.c.subject, distinct=True)
    kept = ("prompts and outputs (decrypted captures)" if context.governance.capture
            else "records only: capture is off, no prompt or output text is kept to give")
    return result(Status.MET, f"`mcp2026 audit export --tenant T --subject ID` gives a subject's {kept} as JSON lines",
                  f"{subjects} distinct subject(s) in records from {context.period.describe()}")


def pseudonymous_subjects(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    with context.audit_engine.connect() as connection:
        query = select(schema.records.c.subject).distinct().where(schema.records.c.subject.is_not(None),
                                                                   *records_in_period(context))
        subjects = connection.execute(query).scalars().all()
    plain = [s for s in subjects if not _PSEUDONYM.match(s)]
    if plain:
        return result(Status.NOT_MET, f"{len(plain)} subject(s) in the records are not keyed pseudonyms "
                                      f"(e.g. {plain[0][:6]}…): user ids were written in clear")
    return result(Status.MET, f"{len(subjects)} subject(s) in records from {context.period.describe()}, each a keyed "
                              "HMAC-SHA256 pseudonym (32 hex digits); no user id is stored")


def capture_encryption(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    key_file = context.key_file
    if key_file.is_file() and key_file.stat().st_mode & 0o077:
        return result(Status.NOT_MET, f"audit key file {key_file} has mode {key_file.stat().st_mode & 0o777:o}: "
                                      f"others can read it; chmod 600 {key_file}")
    key_fact = f"key file {key_file} mode 600" if key_file.is_file() else f"no key file yet at {key_file}"
    if not context.governance.capture:
        return result(Status.MET, "capture is off: records keep the sha256 of prompts and outputs, never the text",
                      key_fact)
    captures = _count(context, schema.captures.c.seq, join_captures=True)
    return result(Status.MET, f"capture is on: {captures} capture(s) from {context.period.describe()} stored "
                              "AES-256-GCM under per-subject keys, wrapped by the key file", key_fact)


def output_provenance(context: EvidenceContext) -> ControlResult:
    if (off := _audit_off(context)) is not None:
        return off
    outputs = _count(context, schema.records.c.output_sha256)
    return result(Status.PARTLY,
                  f"{outputs} output(s) from {context.period.describe()} have their sha256 in the audit trail with the "
                  "model that made them: a text can be traced to this service; responses name their model",
                  "no visible label or watermark is embedded in the generated text itself")


def _audit_off(context: EvidenceContext) -> ControlResult | None:
    if context.governance is None:
        return result(Status.NOT_MET, f"{context.source}: no serving.governance section: no audit trail is kept")
    if not context.governance.audit:
        return result(Status.NOT_MET, f"{context.source}: serving.governance.audit is false: no audit trail is kept")
    return None


def records_in_period(context: EvidenceContext) -> list:
    conditions = [schema.records.c.at_us <= context.period.until_us]
    if context.period.since_us is not None:
        conditions.append(schema.records.c.at_us >= context.period.since_us)
    return conditions


def _count(context: EvidenceContext, column, distinct: bool = False, join_captures: bool = False) -> int:
    counted = func.count(column.distinct()) if distinct else func.count(column)
    source = schema.records.join(schema.captures, schema.captures.c.seq == schema.records.c.seq) \
        if join_captures else schema.records
    with context.audit_engine.connect() as connection:
        return connection.execute(select(counted).select_from(source).where(*records_in_period(context))).scalar_one()


def _scalar(context: EvidenceContext, expression):
    with context.audit_engine.connect() as connection:
        return connection.execute(select(expression)).scalar()


def _last_prune(context: EvidenceContext) -> str:
    with context.audit_engine.connect() as connection:
        anchor = connection.execute(select(schema.anchors).order_by(schema.anchors.c.id.desc()).limit(1)).first()
    if anchor is None:
        return "no prune has deleted a record yet"
    return f"last prune at {iso_time(anchor.at_us)}: {anchor.num_pruned} record(s) up to record {anchor.last_seq}"
