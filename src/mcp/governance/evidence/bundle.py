"""Create and read an evidence bundle (``.ceb``): a zip of fixed members in a fixed order.

    manifest.json            what the release is; the sha256 of each member below
    manifest.json.p7s        detached CMS signature of manifest.json (X.509)
    manifest.json.p7s.tsr    RFC 3161 timestamp over the signature (when a TSA is configured)
    compliance-report.json   the compliance report (when one is given)
    sbom.spdx.json           SPDX 2.3: runtime packages, model artifact, source, datasets
    sbom.cdx.json            CycloneDX 1.6: the same inventory
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mcp.governance.errors import EvidenceError
from mcp.governance.evidence.manifest import (
    CYCLONEDX,
    MANIFEST,
    MEMBER_ORDER,
    REPORT,
    SIGNATURE,
    SPDX,
    TIMESTAMP,
    build_manifest,
    manifest_bytes,
)
from mcp.governance.evidence.sbom import ModelArtifact, cyclonedx_json, runtime_packages, spdx_json
from mcp.governance.evidence.timestamp import request_timestamp
from mcp.governance.signing.cms import sign_detached
from mcp.governance.signing.keys import SigningIdentity
from mcp.modelfile.hashing import file_sha256
from mcp.modelfile.reader import open_model

BUNDLE_SUFFIX = ".ceb"


@dataclass(frozen=True)
class CreatedBundle:
    path: Path
    manifest: dict[str, Any]


def create_bundle(model_path: Path, out: Path, identity: SigningIdentity, report: dict[str, Any] | None = None,
                  tsa_url: str | None = None) -> CreatedBundle:
    """Write the evidence bundle of the ``.mcp`` release ``model_path`` to ``out``."""
    model_path, out = Path(model_path), Path(out)
    _check_identity(identity)
    model = _model_artifact(model_path)
    created = datetime.now(timezone.utc).replace(microsecond=0)
    bundle_id = uuid.uuid4().urn
    members: dict[str, bytes] = {}
    if report is not None:
        members[REPORT] = json.dumps(report, indent=2, sort_keys=True).encode("utf-8") + b"\n"
    packages = runtime_packages()
    members[SPDX] = spdx_json(model, packages, created, f"https://spdx.org/spdxdocs/mcp2026/{bundle_id[9:]}").encode()
    members[CYCLONEDX] = cyclonedx_json(model, packages).encode()
    manifest = build_manifest(bundle_id, created.isoformat(), model, members, report, tsa_url is not None)
    signed = {MANIFEST: manifest_bytes(manifest)}
    signed[SIGNATURE] = sign_detached(signed[MANIFEST], identity)
    if tsa_url is not None:
        signed[TIMESTAMP] = request_timestamp(tsa_url, signed[SIGNATURE])
    _write_zip(out, {**signed, **members}, created)
    return CreatedBundle(out, manifest)


def read_bundle(path: Path) -> dict[str, bytes]:
    """The members of a bundle, by name; an ``EvidenceError`` names a corrupt or foreign member."""
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise EvidenceError(f"{path}: no such evidence bundle") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise EvidenceError(f"{path} is not an evidence bundle (not a readable zip: {exc})") from None
    with archive:
        names = archive.namelist()
        unknown = [n for n in names if n not in MEMBER_ORDER]
        if unknown or len(set(names)) != len(names):
            raise EvidenceError(f"{path}: unexpected member {(unknown or names)[0]!r}; a bundle holds only "
                                + ", ".join(MEMBER_ORDER))
        if names != sorted(names, key=MEMBER_ORDER.index):
            raise EvidenceError(f"{path}: members are out of order ({', '.join(names)})")
        return {name: _read_member(archive, path, name) for name in names}


def _read_member(archive: zipfile.ZipFile, path: Path, name: str) -> bytes:
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:  # a changed byte fails the member's CRC-32
        raise EvidenceError(f"{path}: member {name} is corrupt ({exc}); it changed after the bundle was made") \
            from None


def _model_artifact(model_path: Path) -> ModelArtifact:
    with open_model(model_path) as model_file:
        header = model_file.header
    return ModelArtifact(header.name, model_path.name, file_sha256(model_path), model_path.stat().st_size,
                         header.lineage)


def _check_identity(identity: SigningIdentity) -> None:
    now = datetime.now(timezone.utc)
    cert = identity.certificate
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise EvidenceError(f"the signing certificate '{cert.subject.rfc4514_string()}' is not valid now (valid "
                            f"{cert.not_valid_before_utc.isoformat()} to {cert.not_valid_after_utc.isoformat()}); "
                            "renew it before signing a release")


def _write_zip(out: Path, members: dict[str, bytes], created: datetime) -> None:
    if not out.parent.is_dir():
        raise EvidenceError(f"cannot write {out}: the folder {out.parent} does not exist")
    temporary = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    try:
        with zipfile.ZipFile(temporary, "w") as archive:
            for name in sorted(members, key=MEMBER_ORDER.index):
                info = zipfile.ZipInfo(name, date_time=created.timetuple()[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, members[name])
        os.replace(temporary, out)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
