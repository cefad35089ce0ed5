"""The evidence bundle's manifest: what the release is, and the sha256 of every other member.

The manifest is the one signed member; through the hashes it lists, the signature covers the
SBOMs and the compliance report. Member names and their order in the archive are fixed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

from mcp.governance.evidence.sbom import ModelArtifact

FORMAT = "mcp2026-evidence-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SIGNATURE = "manifest.json.p7s"  # detached CMS over manifest.json
TIMESTAMP = "manifest.json.p7s.tsr"  # RFC 3161 TimeStampResp over the signature file
REPORT = "compliance-report.json"
SPDX = "sbom.spdx.json"
CYCLONEDX = "sbom.cdx.json"
MEMBER_ORDER = (MANIFEST, SIGNATURE, TIMESTAMP, REPORT, SPDX, CYCLONEDX)
_COVERED = frozenset(("covered", "satisfied", "met", "compliant", "pass", "passed", "implemented"))


def build_manifest(bundle_id: str, created_at: str, model: ModelArtifact, members: dict[str, bytes],
                   report: dict[str, Any] | None, timestamped: bool) -> dict[str, Any]:
    lineage = asdict(model.lineage)
    datasets = lineage.pop("datasets")
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "bundle_id": bundle_id,
        "created_at": created_at,
        "model": {"name": model.name, "file": model.file_name, "sha256": model.sha256,
                  "size_bytes": model.size_bytes},
        "model_lineage": lineage,
        "data_lineage": {"datasets": datasets},
        "compliance": _compliance(report),
        "members": [{"name": name, "sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data)}
                    for name, data in members.items()],
        "signature": {"member": SIGNATURE, "format": "CMS SignedData, detached, DER",
                      "timestamp_member": TIMESTAMP if timestamped else None},
    }


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    return json.dumps(manifest, indent=2, sort_keys=True).encode("utf-8") + b"\n"


def _compliance(report: dict[str, Any] | None) -> dict[str, Any]:
    """The clauses the report marks covered (``clauses: [{id, status}]``), its frameworks, and
    its summary (``mcp2026 compliance report``'s JSON has all three)."""
    if report is None:
        return {"report_member": None, "frameworks": [], "clauses_covered": [], "summary": None}
    frameworks = report.get("frameworks") or ([report["framework"]] if report.get("framework") else [])
    clauses = report.get("clauses") if isinstance(report.get("clauses"), list) else []
    covered = [c["id"] for c in clauses
               if isinstance(c, dict) and "id" in c and str(c.get("status", "covered")).lower() in _COVERED]
    return {"report_member": REPORT, "frameworks": [_framework_id(f) for f in frameworks],
            "clauses_covered": covered, "summary": report.get("summary")}


def _framework_id(framework: Any) -> str:
    return str(framework.get("id")) if isinstance(framework, dict) else str(framework)
