"""A real system to report on: an audit database (SQLite or PostgreSQL, from the governance
fixtures) with records, captures and an erasure, a policy bundle folder, a served .mcp model
with a signature file beside it, and the mcp-config.yaml that names them all."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from mcp.governance.audit.log import AuditEntry, AuditLog, Capture
from mcp.governance.audit.maintenance import erase_subject
from mcp.governance.policy.bundle import SHIPPED


def _entry(i: int, subject: str | None) -> AuditEntry:
    return AuditEntry(f"req-{i}", "acme", "POST /v1/chat/completions", f"{i:064x}", "ok",
                      decisions=({"stage": "input", "action": "allow", "policy_version": "v" * 64, "rules": []},),
                      subject=subject, model="tiny", model_version="1", output_sha256=f"{i + 100:064x}",
                      prompt_tokens=5, completion_tokens=7, latency_us=1200)


@pytest.fixture
def system(tmp_path: Path, audit_url: str, key_file: Path, tiny_mcp: Path) -> dict:
    """The facts of the live system the config describes (its parts made for real)."""
    log = AuditLog.open(audit_url, str(key_file))
    alice, bob = log.keys.pseudonym("acme", "alice"), log.keys.pseudonym("acme", "bob")
    for i, subject in enumerate([alice, bob, alice, None], start=1):
        log.append(_entry(i, subject), Capture(f"prompt {i}", f"answer {i}") if subject else None)
    erase_subject(log.engine, bob)
    log.close()
    policies = tmp_path / "policies"
    shutil.copytree(SHIPPED, policies)
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(tiny_mcp, models / "tiny.mcp")
    (models / "tiny.mcp.sig").write_bytes(b"detached signature bytes")
    return {"audit_url": audit_url, "key_file": key_file, "policies": policies, "models": models, "alice": alice,
            "bob": bob, "folder": tmp_path}


@pytest.fixture
def write_config(system: dict) -> Callable[..., Path]:
    """Write mcp-config.yaml for ``system``; keyword arguments override serving.governance keys
    (None removes one), ``governance=False`` drops the section."""

    def write(governance: bool = True, tenants: bool = True, **overrides) -> Path:
        section = {"policy_bundle": "policies", "audit": True, "audit_url": system["audit_url"],
                   "audit_key_file": str(system["key_file"]), "capture": True, "retention_days": 365,
                   "otlp_endpoint": "http://127.0.0.1:4318/v1/traces", "terms": ["forbidden-term"]}
        section.update(overrides)
        serving = {"models": [{"name": "tiny", "source": "tiny.mcp"}]}
        if tenants:
            serving["tenants"] = [{"name": "acme", "key_sha256": [hashlib.sha256(b"k").hexdigest()],
                                   "requests_per_minute": 60}]
        if governance:
            serving["governance"] = {k: v for k, v in section.items() if v is not None}
        path = system["folder"] / "mcp-config.yaml"
        path.write_text(yaml.safe_dump({"runtime": {"model_dir": "models"}, "serving": serving}))
        return path

    return write
