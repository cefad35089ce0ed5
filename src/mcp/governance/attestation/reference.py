"""The reference a verifier holds: expected digests per (kind, name), the pinned instance key,
the pinned TPM attestation key, the expected SEV-SNP launch measurement and AMD's key chain.

    {"format": "mcp2026-reference/1",
     "measurements": [{"kind": "code", "name": "mcp2026 0.1.0 (312 files)", "digest": "..."}, ...],
     "instance_public_key": "base64", "tpm_ak_public": "PEM" | null,
     "sev_snp": {"measurement": "hex", "ark": "PEM", "ask": "PEM", "vcek": "PEM"} | null}
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.snp_report import SnpReport

FORMAT = "mcp2026-reference/1"
SNP_CERTS = ("ark", "ask", "vcek")


def reference_from_evidence(evidence: dict, snp_certs: Path | None = None) -> dict:
    """A reference that the given evidence passes: the latest digest of each (kind, name), its
    keys, and (with ``snp_certs``, a folder of ark.pem, ask.pem, vcek.pem or .der) the SNP chain."""
    latest: dict[tuple[str, str], str] = {}
    for event in evidence.get("log", []):
        latest[(event["kind"], event["name"])] = event["digest"]
    reference = {
        "format": FORMAT,
        "measurements": [{"kind": kind, "name": name, "digest": digest} for (kind, name), digest in latest.items()],
        "instance_public_key": evidence.get("instance_key", {}).get("public_key"),
        "tpm_ak_public": (evidence.get("tpm") or {}).get("ak_public"),
        "sev_snp": None,
    }
    if evidence.get("sev_snp") or snp_certs is not None:
        reference["sev_snp"] = _snp_reference(evidence.get("sev_snp"), snp_certs)
    return reference


def _snp_reference(snp: dict | None, folder: Path | None) -> dict:
    section: dict = {"measurement": SnpReport.parse(bytes.fromhex(snp["report"])).measurement.hex() if snp else None}
    for name in SNP_CERTS:
        section[name] = _read_cert(folder, name) if folder is not None else None
    return section


def _read_cert(folder: Path, name: str) -> str:
    from cryptography.hazmat.primitives import serialization

    from mcp.governance.attestation.snp_report import load_certificate

    for candidate in (folder / f"{name}.pem", folder / f"{name}.der", folder / f"{name}.crt"):
        if candidate.is_file():
            cert = load_certificate(candidate.read_bytes(), name.upper())
            return cert.public_bytes(serialization.Encoding.PEM).decode()
    raise AttestationError(f"--snp-certs {folder}: no {name}.pem or {name}.der there; put AMD's ARK, ASK "
                           "(the cert_chain, split) and this chip's VCEK in it")


def load_json(path: Path, what: str) -> dict:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AttestationError(f"{what} file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AttestationError(f"{what} file {path} is not readable JSON ({exc})") from None
    if not isinstance(document, dict):
        raise AttestationError(f"{what} file {path} must hold a JSON object")
    return document


def expected_digests(reference: dict) -> dict[tuple[str, str], str]:
    if reference.get("format") != FORMAT:
        raise AttestationError(f"the reference's format is {reference.get('format')!r}, not {FORMAT!r}; "
                               "write one with `mcp2026 attest reference`")
    try:
        return {(m["kind"], m["name"]): m["digest"] for m in reference.get("measurements", [])}
    except (KeyError, TypeError):
        raise AttestationError("the reference's measurements must each have kind, name and digest") from None
