"""``mcp2026 audit verify|erase|export|prune``; heavy imports happen only when a command runs."""

from __future__ import annotations

import argparse
import json
import sys


def add_audit_commands(commands: argparse._SubParsersAction) -> None:
    audit = commands.add_parser("audit", help="the audit trail: verify, erase, export, prune (docs/governance.md)")
    audit.add_argument("--db", dest="audit_url", metavar="URL",
                       help="sqlite:///PATH or postgresql+psycopg://USER@HOST/DB "
                            "(default: $MCP_AUDIT_URL, else $MCP_HOME/audit.db)")
    audit.add_argument("--key-file", help="the server's audit key file (default: $MCP_HOME/audit.key)")
    actions = audit.add_subparsers(title="actions", metavar="ACTION")
    actions.add_parser("verify", help="check the hash chain; exit 1 naming each tampered record") \
        .set_defaults(handler=_verify)
    erase = actions.add_parser("erase", help="destroy a data subject's key and captures (GDPR Art. 17)")
    _add_subject(erase)
    erase.set_defaults(handler=_erase)
    export = actions.add_parser("export", help="a data subject's records and captures as JSON lines (Art. 15/20)")
    _add_subject(export)
    export.set_defaults(handler=_export)
    prune = actions.add_parser("prune", help="delete records older than the retention period")
    prune.add_argument("--days", type=float, required=True, help="retention period in days")
    prune.set_defaults(handler=_prune)


def _add_subject(parser: argparse.ArgumentParser) -> None:
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--subject", help="the user id as clients send it (the OpenAI 'user' field); needs --tenant")
    who.add_argument("--pseudonym", help="the subject id as records hold it")
    parser.add_argument("--tenant", help="the tenant the user belongs to (a subject is a tenant's user; an open "
                                         "server's tenant is 'default')")


def _engine(args: argparse.Namespace):
    from mcp.governance.audit.database import open_audit_engine

    return open_audit_engine(args.audit_url)


def _subject(args: argparse.Namespace, keys=None):
    """The Subject the arguments name: a tenant's user, or a pseudonym as records hold it."""
    from mcp.governance.audit.keys import AuditKeys, Subject
    from mcp.governance.errors import AuditError

    if args.pseudonym:
        if args.tenant is not None:
            raise AuditError("--tenant goes with --subject; a --pseudonym names a subject on its own")
        return Subject(args.pseudonym)
    if not args.tenant:
        raise AuditError("--subject needs --tenant: a subject is a tenant's user (an open server's tenant is "
                         "'default')")
    return (keys or AuditKeys.from_file(args.key_file, create=False)).subject(args.tenant, args.subject)


def _verify(args: argparse.Namespace) -> int:
    from mcp.governance.audit.verify import verify

    report = verify(_engine(args))
    for problem in report.problems:
        print(f"TAMPERED: {problem}")
    verdict = "ok" if report.ok else f"FAILED ({len(report.problems)} problem(s))"
    print(f"audit chain {verdict}: {report.num_records} records, head {report.head_seq} {report.head_hash}")
    return 0 if report.ok else 1


def _erase(args: argparse.Namespace) -> int:
    from mcp.governance.audit.maintenance import erase_subject

    result = erase_subject(_engine(args), _subject(args))
    key = "destroyed" if result.key_destroyed else "none was kept"
    legacy = f", {result.num_legacy_records} of them under the legacy pseudonym" if result.num_legacy_records else ""
    print(f"subject {result.subject}: key {key}, {result.num_captures} capture(s) deleted, "
          f"{result.num_records} record(s) kept{legacy} (hashes only; the chain still verifies)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from mcp.governance.audit.keys import AuditKeys
    from mcp.governance.audit.maintenance import export_subject

    keys = AuditKeys.from_file(args.key_file, create=False)
    for record in export_subject(_engine(args), keys, _subject(args, keys)):
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    return 0


def _prune(args: argparse.Namespace) -> int:
    from mcp.governance.audit.maintenance import prune

    result = prune(_engine(args), args.days)
    where = f" (records up to {result.last_seq}, anchored)" if result.last_seq else ""
    print(f"pruned {result.num_pruned} record(s) older than {args.days:g} days{where}")
    return 0
