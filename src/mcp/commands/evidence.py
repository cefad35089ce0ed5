"""``mcp2026 bundle create|verify``; heavy imports happen only when a command runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mcp.commands.compliance import FRAMEWORKS, registry_versions
from mcp.governance.signing.commands import add_identity_arguments

DEFAULT_CONFIG = Path("mcp-config.yaml")


def add_bundle_commands(commands: argparse._SubParsersAction) -> None:
    bundle = commands.add_parser("bundle", help="evidence bundles: bundle create|verify (docs/compliance.md)")
    actions = bundle.add_subparsers(title="actions", metavar="ACTION")
    create = actions.add_parser("create", help="the signed evidence bundle (.ceb) of a model release")
    create.add_argument("model", type=Path, help="the released .mcp file")
    create.add_argument("--out", type=Path, required=True, help="the bundle to write, e.g. release.ceb")
    report = create.add_mutually_exclusive_group()
    report.add_argument("--report", type=Path, help="the compliance report JSON to include (default: build it now "
                                                    "from --config, as `mcp2026 compliance report` does)")
    report.add_argument("--no-report", action="store_true", help="a bundle without a compliance report")
    create.add_argument("--framework", choices=FRAMEWORKS, default="all", help="the report's framework (default all)")
    create.add_argument("--registry", metavar="URL", help="the report also checks this model registry's lineage")
    create.add_argument("--tsa-url", help="an RFC 3161 timestamp authority (default: signing.tsa_url)")
    add_identity_arguments(create)
    create.set_defaults(handler=_create)
    verify = actions.add_parser("verify", help="check a bundle: members, signature, chain, timestamp")
    verify.add_argument("bundle", type=Path)
    verify.add_argument("--ca", type=Path, help="PEM file of the trusted CAs (default: the evaluation CA)")
    verify.add_argument("--tsa-ca", type=Path, help="PEM file of the timestamp authority's CAs (default: --ca)")
    verify.add_argument("--model", type=Path, help="also check that the bundle is this .mcp file's")
    verify.add_argument("--at", help="check the certificates as of this ISO 8601 time (default: the "
                                     "timestamp's time, else now)")
    verify.set_defaults(handler=_verify)


def _create(args: argparse.Namespace) -> int:
    from mcp.governance.evidence.bundle import create_bundle
    from mcp.governance.signing.commands import resolve_identity, signing_config

    identity = resolve_identity(args)
    report = None if args.no_report else _report(args.report) if args.report else _report_now(args)
    tsa_url = args.tsa_url or signing_config(args).tsa_url
    created = create_bundle(args.model, args.out, identity, report, tsa_url)
    manifest = created.manifest
    print(f"wrote {created.path}: bundle {manifest['bundle_id']}, model {manifest['model']['name']} "
          f"sha256 {manifest['model']['sha256'][:12]}, {len(manifest['members'])} hashed members"
          + (", timestamped" if tsa_url else ""))
    return 0


def _report(path: Path) -> dict:
    from mcp.governance.errors import EvidenceError

    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvidenceError(f"cannot read the report {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvidenceError(f"the report {path} is not JSON ({exc}); give `mcp2026 compliance report`'s JSON") \
            from None
    if not isinstance(report, dict):
        raise EvidenceError(f"the report {path} is not a JSON object")
    return report


def _report_now(args: argparse.Namespace) -> dict:
    """The compliance report of the system ``--config`` (default ./mcp-config.yaml) describes, now."""
    from mcp.governance.compliance.context import EvidenceContext
    from mcp.governance.compliance.report import build_report
    from mcp.governance.errors import EvidenceError

    config = args.config or DEFAULT_CONFIG
    if not config.is_file():
        raise EvidenceError(f"no compliance report: {config} does not exist; give --config (the server's "
                            "mcp-config.yaml) to build one now, --report FILE, or --no-report")
    with EvidenceContext.from_config_file(config, registry_versions=registry_versions(args.registry)) as context:
        return build_report(context, args.framework).to_json()


def _verify(args: argparse.Namespace) -> int:
    from datetime import datetime, timezone

    from mcp.governance.errors import EvidenceError
    from mcp.governance.evidence.verify import verify_bundle
    from mcp.governance.signing.commands import trusted_ca_file
    from mcp.governance.signing.keys import load_certificates

    trusted = load_certificates(trusted_ca_file(args.ca))
    tsa_trusted = load_certificates(args.tsa_ca) if args.tsa_ca else None
    at = None
    if args.at:
        try:
            at = datetime.fromisoformat(args.at)
        except ValueError:
            raise EvidenceError(f"--at {args.at!r} is not an ISO 8601 time, e.g. 2027-01-31T12:00:00+00:00") from None
        at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
    result = verify_bundle(args.bundle, trusted, tsa_trusted, at, args.model)
    stamp = f", timestamped {result.timestamp.isoformat()}" if result.timestamp else ", no timestamp"
    print(f"{args.bundle}: ok: bundle {result.bundle_id}, model {result.model_name} sha256 "
          f"{result.model_sha256[:12]}, signed by {result.signer}{stamp}; members {', '.join(result.members)}")
    return 0
