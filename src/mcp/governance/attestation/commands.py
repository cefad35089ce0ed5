"""``mcp2026 attest`` (evidence), ``attest verify`` and ``attest reference``; heavy imports
happen only when a command runs."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path


def add_attest_commands(commands: argparse._SubParsersAction) -> None:
    attest = commands.add_parser("attest", help="measured launch evidence: make, verify, reference (docs/security.md)",
                                 description="Print evidence (JSON): measured here from --config, or a server's "
                                             "(GET /attestation) with --url.")
    _add_evidence_source(attest)
    attest.add_argument("-o", "--output", type=Path, help="write the evidence here (default: stdout)")
    attest.set_defaults(handler=_attest)
    actions = attest.add_subparsers(title="actions", metavar="ACTION")

    verify = actions.add_parser("verify", help="check evidence against a reference; exit 2 naming each problem")
    verify.add_argument("evidence", type=Path, help="an evidence JSON file")
    verify.add_argument("--expect", type=Path, required=True, metavar="REFERENCE", help="a reference JSON file")
    verify.add_argument("--nonce", help="the nonce sent for this evidence: it must be the one in it")
    verify.add_argument("--max-age", type=float, metavar="S", help="the evidence must be at most S seconds old")
    verify.set_defaults(handler=_verify)

    reference = actions.add_parser("reference", help="write a reference that the current evidence passes")
    reference.add_argument("--evidence", type=Path, help="from this evidence file (default: measure as `attest` does)")
    _add_evidence_source(reference)
    reference.add_argument("--snp-certs", type=Path, metavar="DIR",
                           help="a folder of ark.pem, ask.pem and vcek.pem (or .der) to check SEV-SNP reports with")
    reference.add_argument("-o", "--output", type=Path, required=True, help="the reference file to write")
    reference.set_defaults(handler=_reference)


def _add_evidence_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nonce", help="hex or base64url, 8 to 64 bytes (default: 32 random bytes)")
    parser.add_argument("--config", type=Path, help="an mcp-config.yaml: what a server with it would measure")
    parser.add_argument("--url", help="ask this server instead, e.g. http://127.0.0.1:8000")
    parser.add_argument("--api-key", help="with --url: sent as a Bearer token")
    parser.add_argument("--tpm", action="store_true",
                        help="measure into the configured TPM too (resets its PCR: not while a server uses it)")


def _attest(args: argparse.Namespace) -> int:
    _write(_evidence(args), args.output)
    return 0


def _evidence(args: argparse.Namespace) -> dict:
    nonce = args.nonce or secrets.token_hex(32)
    if args.url:
        from mcp.governance.attestation.remote import fetch_evidence

        return fetch_evidence(args.url, nonce, args.api_key)
    from mcp.governance.attestation.local import local_evidence
    from mcp.config.runtime import RuntimeConfig, load_config

    config = load_config(args.config) if args.config else RuntimeConfig()
    return local_evidence(config, str(args.config) if args.config else None, nonce, with_tpm=args.tpm)


def _verify(args: argparse.Namespace) -> int:
    from mcp.governance.attestation.reference import load_json
    from mcp.governance.attestation.verify import verify_evidence

    evidence = load_json(args.evidence, "evidence")
    problems = verify_evidence(evidence, load_json(args.expect, "reference"), args.nonce, args.max_age)
    for problem in problems:
        print(problem)
    if problems:
        print(f"attestation FAILED: {len(problems)} problem(s)", file=sys.stderr)
        return 2
    if args.nonce is None and args.max_age is None:
        print("note: freshness not checked (give --nonce or --max-age)", file=sys.stderr)
    hardware = [name for name in ("tpm", "sev_snp") if evidence.get(name)]
    print(f"attestation ok: {len(evidence['log'])} events, PCRs {evidence['pcrs']}, "
          f"hardware: {', '.join(hardware) or 'none (software log only)'}")
    return 0


def _reference(args: argparse.Namespace) -> int:
    from mcp.governance.attestation.reference import load_json, reference_from_evidence

    evidence = load_json(args.evidence, "evidence") if args.evidence else _evidence(args)
    reference = reference_from_evidence(evidence, args.snp_certs)
    _write(reference, args.output)
    print(f"wrote {args.output}: {len(reference['measurements'])} measurements", file=sys.stderr)
    return 0


def _write(document: dict, path: Path | None) -> None:
    text = json.dumps(document, indent=2) + "\n"
    if path is None:
        sys.stdout.write(text)
    else:
        path.write_text(text, encoding="utf-8")
