"""The audit trail on SQLite and PostgreSQL: appends chain and commit, the tables refuse edits,
verify names an edited, deleted, inserted or reordered record (each tampering done the way a
database administrator could, triggers off), erase shreds captures and keeps the chain, export
returns a subject's records, prune keeps the rest verifiable, and the CLI says all of it."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from mcp.commands.cli import main
from mcp.governance.audit import schema
from mcp.governance.audit.chain import record_hash
from mcp.governance.audit.log import AuditEntry, AuditLog, Capture
from mcp.governance.audit.maintenance import erase_subject, export_subject, prune
from mcp.governance.audit.verify import verify


def _entry(i: int, subject: str | None = None, at_us: int = 0) -> AuditEntry:
    return AuditEntry(f"req-{i}", "acme", "POST /v1/chat/completions", f"{i:064x}", "ok",
                      decisions=({"stage": "input", "action": "allow", "policy_version": "v", "rules": []},),
                      subject=subject, model="smollm2", model_version="1", prompt_tokens=5, completion_tokens=7,
                      latency_us=1200, at_us=at_us)


def _fill(log: AuditLog, num: int = 6) -> None:
    for i in range(1, num + 1):
        log.append(_entry(i))


def _tamper(log: AuditLog, *statements: str) -> None:
    """What an administrator could do: triggers off, then raw SQL."""
    with log.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("ALTER TABLE audit_records DISABLE TRIGGER USER"))
        else:
            connection.execute(text("DROP TRIGGER audit_records_no_update"))
            connection.execute(text("DROP TRIGGER audit_records_no_delete"))
        for statement in statements:
            connection.execute(text(statement))


def test_appends_chain_and_verify(audit_log: AuditLog) -> None:
    first = audit_log.append(_entry(1))
    second = audit_log.append(_entry(2))
    assert (first.seq, second.seq) == (1, 2)
    with audit_log.engine.connect() as connection:
        rows = connection.execute(select(schema.records).order_by(schema.records.c.seq)).all()
    assert rows[0].prev_hash == schema.GENESIS and rows[1].prev_hash == rows[0].hash == first.hash
    assert rows[1].decisions == '[{"action":"allow","policy_version":"v","rules":[],"stage":"input"}]'
    report = verify(audit_log.engine)
    assert report.ok and report.num_records == 2 and report.head_hash == second.hash


def test_the_records_refuse_update_and_delete(audit_log: AuditLog) -> None:
    _fill(audit_log, 2)
    for statement in ("UPDATE audit_records SET tenant = 'x' WHERE seq = 1", "DELETE FROM audit_records WHERE seq = 1"):
        with pytest.raises(DBAPIError, match="append-only"), audit_log.engine.begin() as connection:
            connection.execute(text(statement))


def test_concurrent_appends_form_one_chain(audit_log: AuditLog) -> None:
    threads = [threading.Thread(target=lambda k=k: [audit_log.append(_entry(k * 100 + i)) for i in range(6)])
               for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = verify(audit_log.engine)
    assert report.ok and report.num_records == 36 and report.head_seq == 36


def _open_and_append(url: str, key_file: str, writer: int) -> int:
    log = AuditLog.open(url, key_file)
    try:
        return log.append(_entry(writer)).seq
    finally:
        log.close()


def test_processes_opening_a_new_sqlite_trail_at_once_all_append(tmp_path: Path, key_file: Path) -> None:
    """Each process migrates and switches the new file to WAL; none fails with "database is locked"."""
    urls = [f"sqlite:///{tmp_path / f'new{round_}.db'}" for round_ in range(25)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        for url in urls:
            seqs = pool.starmap(_open_and_append, [(url, str(key_file), k) for k in range(4)])
            assert sorted(seqs) == [1, 2, 3, 4]
            log = AuditLog.open(url, str(key_file))
            assert verify(log.engine).ok
            log.close()


def test_verify_names_an_edited_record(audit_log: AuditLog) -> None:
    _fill(audit_log)
    _tamper(audit_log, "UPDATE audit_records SET completion_tokens = 1 WHERE seq = 3")
    assert verify(audit_log.engine).problems == [
        "record 3 (request req-3) was edited: its fields no longer match its hash"]


def test_verify_names_a_deleted_record(audit_log: AuditLog) -> None:
    _fill(audit_log)
    _tamper(audit_log, "DELETE FROM audit_records WHERE seq = 3")
    assert verify(audit_log.engine).problems == [
        "record 3 deleted: record 4 (request req-4) is chained to a record that is gone"]


def test_verify_names_a_deleted_last_record(audit_log: AuditLog) -> None:
    _fill(audit_log)
    _tamper(audit_log, "DELETE FROM audit_records WHERE seq = 6")
    assert verify(audit_log.engine).problems == [
        "records after 5 were deleted: the head says the last record is 6"]


def test_verify_names_an_inserted_record(audit_log: AuditLog) -> None:
    _fill(audit_log)
    with audit_log.engine.connect() as connection:
        before = connection.execute(select(schema.records.c.hash).where(schema.records.c.seq == 2)).scalar_one()
    forged = {**_entry(99).__dict__, "decisions": "[]", "at_us": 1}
    digest = record_hash(before, forged)  # a well-formed record, chained to record 2
    columns = ", ".join(forged)
    values = ", ".join(f"'{v}'" if isinstance(v, str) else ("NULL" if v is None else str(v)) for v in forged.values())
    _tamper(audit_log, "UPDATE audit_records SET seq = seq + 1000 WHERE seq >= 3",
            "UPDATE audit_records SET seq = seq - 999 WHERE seq >= 1000",
            f"INSERT INTO audit_records (seq, {columns}, prev_hash, hash) VALUES (3, {values}, '{before}', '{digest}')")
    assert verify(audit_log.engine).problems == [
        "record 3 (request req-99) was inserted: no record is chained to it and record 4 links past it"]


def test_verify_names_reordered_records(audit_log: AuditLog) -> None:
    _fill(audit_log)
    _tamper(audit_log, "UPDATE audit_records SET seq = 100 WHERE seq = 3",
            "UPDATE audit_records SET seq = 3 WHERE seq = 4", "UPDATE audit_records SET seq = 4 WHERE seq = 100")
    problems = verify(audit_log.engine).problems
    assert problems[0] == ("record 3 (request req-4) is out of order: it is chained after record 4 "
                           "(request req-3), which comes later")
    assert all("req-3" in p or "req-4" in p or "record 5" in p for p in problems)


def test_erase_shreds_captures_and_the_chain_still_verifies(audit_log: AuditLog) -> None:
    alice, bob = audit_log.keys.pseudonym("acme", "alice"), audit_log.keys.pseudonym("acme", "bob")
    audit_log.append(_entry(1, alice), Capture("alice's prompt", "an answer"))
    audit_log.append(_entry(2, bob), Capture("bob's prompt", "another"))
    audit_log.append(_entry(3, alice), Capture("again", None))
    exported = list(export_subject(audit_log.engine, audit_log.keys, alice))
    assert [r["capture"] for r in exported] == [{"prompt": "alice's prompt", "output": "an answer"},
                                                {"prompt": "again", "output": None}]
    assert exported[0]["request_id"] == "req-1" and exported[0]["subject"] == alice
    result = erase_subject(audit_log.engine, alice)
    assert (result.key_destroyed, result.num_captures, result.num_records) == (True, 2, 2)
    assert [("capture" in r) for r in export_subject(audit_log.engine, audit_log.keys, alice)] == [False, False]
    assert next(export_subject(audit_log.engine, audit_log.keys, bob))["capture"]["prompt"] == "bob's prompt"
    assert verify(audit_log.engine).ok


def test_prune_keeps_the_rest_verifiable(audit_log: AuditLog) -> None:
    day_us = 86400 * 10**6
    for i in range(1, 7):
        audit_log.append(_entry(i, at_us=i * day_us))
    result = prune(audit_log.engine, retention_days=3, now_s=7 * 86400)  # keeps days 4, 5, 6
    assert (result.num_pruned, result.last_seq) == (3, 3)
    report = verify(audit_log.engine)
    assert report.ok and report.num_records == 3
    audit_log.append(_entry(7))
    assert verify(audit_log.engine).ok
    with pytest.raises(DBAPIError, match="append-only"), audit_log.engine.begin() as connection:
        connection.execute(text("DELETE FROM audit_records WHERE seq = 5"))  # not covered by an anchor


def test_cli_verify_erase_export_prune(audit_log: AuditLog, audit_url: str, key_file: Path, capsys) -> None:
    audit_log.append(_entry(1, audit_log.keys.pseudonym("acme", "carol")), Capture("carol asks", "an answer"))
    audit_log.append(_entry(2))
    base = ["audit", "--db", audit_url, "--key-file", str(key_file)]
    assert main([*base, "verify"]) == 0
    assert "audit chain ok: 2 records" in capsys.readouterr().out
    assert main([*base, "export", "--tenant", "acme", "--subject", "carol"]) == 0
    assert '"capture": {"prompt": "carol asks", "output": "an answer"}' in capsys.readouterr().out
    assert main([*base, "erase", "--tenant", "acme", "--subject", "carol"]) == 0
    assert "key destroyed, 1 capture(s) deleted, 1 record(s) kept" in capsys.readouterr().out
    assert main([*base, "prune", "--days", "365"]) == 0
    assert "pruned 0 record(s)" in capsys.readouterr().out
    _tamper(audit_log, "UPDATE audit_records SET tenant = 'other' WHERE seq = 2")
    assert main([*base, "verify"]) == 1
    assert "TAMPERED: record 2 (request req-2) was edited" in capsys.readouterr().out


def test_cli_errors_are_one_clear_line(tmp_path: Path, capsys) -> None:
    assert main(["audit", "--db", "mysql://x/y", "verify"]) == 2
    assert "only sqlite:/// and postgresql+psycopg:// databases are supported" in capsys.readouterr().err
    assert main(["audit", "--db", f"sqlite:///{tmp_path}/a.db", "--key-file", str(tmp_path / "none"),
                 "export", "--tenant", "t", "--subject", "x"]) == 2
    assert "audit key file" in capsys.readouterr().err
