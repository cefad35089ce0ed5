"""Verify an evidence bundle; each failure is an ``EvidenceError`` naming its cause.

In order: the archive and its members (a corrupt or unexpected member is named), the
timestamp (when the manifest says there is one: it must cover the signature and come from a
trusted TSA), the manifest's signature and its certificate path at the timestamp's time (or
at ``at``, default now: an expired certificate fails), then each member's sha256 against the
signed manifest (a changed or missing member is named).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cryptography import x509

from mcp.governance.errors import EvidenceError, SigningError
from mcp.governance.evidence.bundle import read_bundle
from mcp.governance.evidence.manifest import FORMAT, MANIFEST, SIGNATURE, TIMESTAMP
from mcp.governance.evidence.timestamp import verify_timestamp
from mcp.governance.signing.cms import verify_detached


@dataclass(frozen=True)
class BundleVerification:
    """What a verified bundle says."""

    bundle_id: str
    model_name: str
    model_sha256: str
    signer: str
    timestamp: datetime | None  # the TSA's time, when the bundle is timestamped
    members: tuple[str, ...]


def verify_bundle(path: Path, trusted: list[x509.Certificate], tsa_trusted: list[x509.Certificate] | None = None,
                  at: datetime | None = None, model: Path | None = None) -> BundleVerification:
    """Check the bundle (see the module docstring); with ``model``, also that it is that file's."""
    members = read_bundle(Path(path))
    for required in (MANIFEST, SIGNATURE):
        if required not in members:
            raise EvidenceError(f"{path}: missing member {required}")
    manifest = _manifest(path, members[MANIFEST])
    stamped_at = _timestamp(path, manifest, members, tsa_trusted or trusted)
    checked_at = stamped_at or at or datetime.now(timezone.utc)
    try:
        info = verify_detached(members[SIGNATURE], members[MANIFEST], trusted, checked_at)
    except SigningError as exc:
        raise EvidenceError(f"{path}: the signature of {MANIFEST} is refused: {exc}") from None
    _check_members(path, manifest, members)
    if model is not None:
        _check_model(path, manifest, Path(model))
    return BundleVerification(manifest["bundle_id"], manifest["model"]["name"], manifest["model"]["sha256"],
                              info.signer_name, stamped_at, tuple(members))


def _manifest(path: Path, data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvidenceError(f"{path}: member {MANIFEST} is not JSON ({exc}); it changed after signing") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EvidenceError(f"{path}: member {MANIFEST} is not an MCP 2026 evidence manifest")
    return manifest


def _timestamp(path: Path, manifest: dict[str, Any], members: dict[str, bytes],
               trusted: list[x509.Certificate]) -> datetime | None:
    expected = (manifest.get("signature") or {}).get("timestamp_member")
    if expected is None:
        if TIMESTAMP in members:
            raise EvidenceError(f"{path}: member {TIMESTAMP} is there but the manifest declares no timestamp")
        return None
    if TIMESTAMP not in members:
        raise EvidenceError(f"{path}: missing member {TIMESTAMP} (the manifest declares a timestamp)")
    try:
        return verify_timestamp(members[TIMESTAMP], members[SIGNATURE], trusted)
    except EvidenceError as exc:
        raise EvidenceError(f"{path}: bad timestamp in member {TIMESTAMP}: {exc}") from None


def _check_model(path: Path, manifest: dict[str, Any], model: Path) -> None:
    from mcp.modelfile.hashing import file_sha256

    if not model.is_file():
        raise EvidenceError(f"{model}: no such model file to check against {path}")
    digest, recorded = file_sha256(model), manifest["model"]["sha256"]
    if digest != recorded:
        raise EvidenceError(f"{model} is not the model of {path}: its sha256 is {digest}, the bundle is for "
                            f"{manifest['model']['file']} with sha256 {recorded}")


def _check_members(path: Path, manifest: dict[str, Any], members: dict[str, bytes]) -> None:
    listed = {entry["name"]: entry for entry in manifest.get("members", [])}
    for name, entry in listed.items():
        if name not in members:
            raise EvidenceError(f"{path}: missing member {name} (listed in the signed manifest)")
        digest = hashlib.sha256(members[name]).hexdigest()
        if digest != entry["sha256"]:
            raise EvidenceError(f"{path}: member {name} changed after signing (sha256 {digest}, the manifest "
                                f"says {entry['sha256']})")
    unlisted = [name for name in members if name not in listed and name not in (MANIFEST, SIGNATURE, TIMESTAMP)]
    if unlisted:
        raise EvidenceError(f"{path}: member {unlisted[0]} is not listed in the signed manifest")
