"""Checking evidence against a reference: every problem named, expected against got.

Checks, in order: the instance key's signature (and the pinned key), freshness (the nonce the
verifier sent, the evidence's age), the log's replay against the reported PCR values, the TPM
quote, the SEV-SNP report and its chain, and each measurement against the reference.
"""

from __future__ import annotations

import time

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from mcp.governance.attestation.errors import AttestationError, NonceError
from mcp.governance.attestation.evidence import FORMAT, signed_part, snp_report_data
from mcp.governance.attestation.keys import verify_signature
from mcp.governance.attestation.log import ZERO_PCR, MeasurementEvent, replay
from mcp.governance.attestation.nonce import parse_nonce
from mcp.governance.attestation.reference import expected_digests
from mcp.governance.attestation.snp_report import SnpReport, check_report, load_certificate
from mcp.governance.attestation.tpm_quote import check_quote

MAX_CLOCK_SKEW_S = 300


def verify_evidence(evidence: dict, reference: dict, nonce: str | None = None, max_age_s: float | None = None,
                    now: float | None = None) -> list[str]:
    """The problems found, one line each; an empty list means the evidence passed."""
    if evidence.get("format") != FORMAT:
        return [f"evidence format is {evidence.get('format')!r}, expected {FORMAT!r}"]
    expected = expected_digests(reference)
    try:
        events = tuple(MeasurementEvent.from_dict(e) for e in evidence.get("log", []))
        evidence_nonce = parse_nonce(evidence.get("nonce"))
    except (AttestationError, NonceError) as exc:
        return [f"evidence is malformed: {exc}"]
    pcrs = replay(events)
    return [*_signature_problems(evidence, reference), *_freshness_problems(evidence, nonce, max_age_s, now),
            *_replay_problems(evidence, pcrs), *_tpm_problems(evidence, reference, evidence_nonce, pcrs),
            *_snp_problems(evidence, reference, evidence_nonce, pcrs), *_measurement_problems(events, expected)]


def _signature_problems(evidence: dict, reference: dict) -> list[str]:
    public_key = (evidence.get("instance_key") or {}).get("public_key", "")
    problems = []
    if not verify_signature(public_key, evidence.get("signature", ""), signed_part(evidence)):
        problems.append("instance signature: does not verify with the evidence's instance key "
                        "(the evidence was altered after signing)")
    pinned = reference.get("instance_public_key")
    if pinned and pinned != public_key:
        problems.append(f"instance key: expected {pinned}, got {public_key}")
    return problems


def _freshness_problems(evidence: dict, nonce: str | None, max_age_s: float | None, now: float | None) -> list[str]:
    problems = []
    if nonce is not None and parse_nonce(nonce) != parse_nonce(evidence["nonce"]):
        problems.append(f"nonce: expected {nonce}, got {evidence['nonce']}")
    if max_age_s is not None:
        made, now = evidence.get("time"), time.time() if now is None else now
        if not isinstance(made, int):
            problems.append(f"time: the evidence has no integer time (got {made!r})")
        elif now - made > max_age_s:
            problems.append(f"time: the evidence is {now - made:.0f} s old, over --max-age {max_age_s:g}")
        elif made - now > MAX_CLOCK_SKEW_S:
            problems.append(f"time: the evidence is dated {made - now:.0f} s in the future")
    return problems


def _replay_problems(evidence: dict, pcrs: dict[int, str]) -> list[str]:
    reported = {int(k): v for k, v in (evidence.get("pcrs") or {}).items()}
    return [f"PCR {index}: the evidence reports {reported.get(index)}, the log replays to {pcrs.get(index)}"
            for index in sorted(set(reported) | set(pcrs)) if reported.get(index) != pcrs.get(index)]


def _tpm_problems(evidence: dict, reference: dict, nonce: bytes, pcrs: dict[int, str]) -> list[str]:
    tpm, pinned = evidence.get("tpm"), reference.get("tpm_ak_public")
    if tpm is None:
        return ["TPM: the reference pins an attestation key, the evidence has no TPM quote"] if pinned else []
    problems = check_quote(tpm, nonce, pcrs)
    if pinned and _public_der(pinned) != _public_der(tpm.get("ak_public", "")):
        problems.append("TPM: the attestation key is not the one the reference pins (tpm_ak_public)")
    return problems


def _public_der(pem: str) -> bytes | None:
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, UnsupportedAlgorithm):
        return None
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _snp_problems(evidence: dict, reference: dict, nonce: bytes, pcrs: dict[int, str]) -> list[str]:
    snp, expected = evidence.get("sev_snp"), reference.get("sev_snp")
    if snp is None:
        return ["SEV-SNP: the reference expects a report, the evidence has none"] if expected else []
    if not expected or not all(expected.get(name) for name in ("ark", "ask", "vcek")):
        return ["SEV-SNP: the evidence has a report but the reference has no ark/ask/vcek to check it with "
                "(`mcp2026 attest reference --snp-certs DIR`)"]
    try:
        report = SnpReport.parse(bytes.fromhex(snp["report"]))
        chain = [load_certificate(expected[name].encode(), name.upper()) for name in ("ark", "ask", "vcek")]
    except (AttestationError, KeyError, ValueError, TypeError) as exc:
        return [f"SEV-SNP: the report or the reference's certificates do not read ({exc})"]
    problems = check_report(report, *chain)
    pcr = next(iter(pcrs), None)
    binding = snp_report_data(nonce, evidence["instance_key"]["public_key"], pcrs.get(pcr, ZERO_PCR))
    if report.report_data != binding:
        problems.append(f"SEV-SNP: report_data is {report.report_data.hex()}, expected {binding.hex()} "
                        "(sha512 of the nonce, the instance key and the log's PCR)")
    if expected.get("measurement") and expected["measurement"] != report.measurement.hex():
        problems.append(f"SEV-SNP measurement: expected {expected['measurement']}, got {report.measurement.hex()}")
    return problems


def _measurement_problems(events: tuple[MeasurementEvent, ...], expected: dict[tuple[str, str], str]) -> list[str]:
    """The latest event of each (kind, name) against the reference; what it pins but the log lacks."""
    latest: dict[tuple[str, str], tuple[int, MeasurementEvent]] = {}
    for index, event in enumerate(events):
        latest[(event.kind, event.name)] = (index, event)
    problems = []
    for (kind, name), (index, event) in latest.items():
        want = expected.get((kind, name))
        if want is None:
            problems.append(f"event {index} ({kind} {name}): not in the reference (got {event.digest})")
        elif want != event.digest:
            problems.append(f"event {index} ({kind} {name}): expected {want}, got {event.digest}")
    problems += [f"{kind} {name}: in the reference but not measured (expected {digest})"
                 for (kind, name), digest in expected.items() if (kind, name) not in latest]
    return problems
