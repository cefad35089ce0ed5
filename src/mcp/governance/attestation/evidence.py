"""Evidence: the measurement log, the nonce, the replayed PCR values, the providers' hardware
reports, all signed by the instance key.

    {"format": "mcp2026-evidence/1", "nonce": "...", "time": 1733245200,
     "log": [{"pcr": 23, "kind": "code", "name": "...", "digest": "..."}, ...],
     "pcrs": {"23": "..."}, "serving": {"smollm2": "smollm2:1"},
     "instance_key": {"algorithm": "ed25519", "public_key": "base64"},
     "tpm": {...} | absent, "sev_snp": {...} | absent, "signature": "base64"}

The signature covers the canonical JSON (sorted keys, no spaces) of everything else.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Protocol

from mcp.governance.attestation.keys import ALGORITHM, InstanceKey
from mcp.governance.attestation.log import MeasurementEvent, MeasurementLog, replay
from mcp.governance.attestation.nonce import parse_nonce

FORMAT = "mcp2026-evidence/1"


@dataclass(frozen=True)
class EvidenceContext:
    """What a provider binds its report to: the nonce, the log as quoted, the instance key."""

    nonce: bytes
    events: tuple[MeasurementEvent, ...]
    pcrs: dict[int, str]
    instance_public_key: str  # base64


class EvidenceProvider(Protocol):
    """A hardware root of trust: a TPM, an SEV-SNP guest."""

    name: str  # the evidence's key: "tpm" | "sev_snp"

    def report(self, context: EvidenceContext) -> dict: ...

    def close(self) -> None: ...


def canonical_json(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signed_part(evidence: dict) -> bytes:
    return canonical_json({k: v for k, v in evidence.items() if k != "signature"})


def snp_report_data(nonce: bytes, instance_public_key: str, pcr_value: str) -> bytes:
    """The 64 bytes an SNP report carries: SHA-512 of the nonce, the instance public key (base64
    text) and the log's replayed PCR value, so the report vouches for this key and this log."""
    return hashlib.sha512(nonce + instance_public_key.encode() + bytes.fromhex(pcr_value)).digest()


def make_evidence(log: MeasurementLog, key: InstanceKey, nonce_text: str | None,
                  providers: tuple[EvidenceProvider, ...] = (), serving: dict[str, str] | None = None) -> dict:
    """Evidence over ``nonce_text`` (a NonceError when it is missing or malformed)."""
    nonce = parse_nonce(nonce_text)
    with log.frozen() as events:  # no extend between the replay and the hardware reports
        pcrs = replay(events)
        context = EvidenceContext(nonce, events, pcrs, key.public_b64)
        reports = {provider.name: provider.report(context) for provider in providers}
    evidence = {
        "format": FORMAT, "nonce": nonce_text, "time": int(time.time()),
        "log": [event.to_dict() for event in events], "pcrs": {str(k): v for k, v in sorted(pcrs.items())},
        "serving": dict(serving or {}), "instance_key": {"algorithm": ALGORITHM, "public_key": key.public_b64},
        **reports,
    }
    evidence["signature"] = key.sign(signed_part(evidence))
    return evidence
