"""Evidence bundles of the tiny model: members, SBOM validity, the real openssl's view of the
signature and timestamp, and each way a bundle fails verification, by its named cause."""

from __future__ import annotations

import json
import subprocess
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mcp.commands.cli import main
from mcp.governance.errors import EvidenceError
from mcp.governance.evidence.bundle import create_bundle
from mcp.governance.evidence.manifest import MEMBER_ORDER
from mcp.governance.evidence.verify import verify_bundle
from mcp.governance.signing.keys import init_keys, load_certificates, load_identity
from mcp.modelfile.hashing import file_sha256

REPORT = {"framework": "gdpr", "clauses": [{"id": "gdpr-art-30", "status": "covered"},
                                           {"id": "gdpr-art-35", "status": "gap"}]}


def _members(bundle: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(bundle) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rewrite(bundle: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(bundle, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _trusted(pki) -> list:
    return load_certificates(pki[0].ca_cert)


@pytest.fixture
def bundle(pki, tiny_copy, tmp_path) -> Path:
    return create_bundle(tiny_copy, tmp_path / "release.ceb", pki[1], REPORT).path


def test_bundle_holds_fixed_members_hashed_in_a_signed_manifest(bundle, pki, tiny_copy):
    members = _members(bundle)
    assert list(members) == [name for name in MEMBER_ORDER if name != "manifest.json.p7s.tsr"]
    manifest = json.loads(members["manifest.json"])
    assert manifest["model"]["sha256"] == file_sha256(tiny_copy)
    assert manifest["model_lineage"]["source_format"] == "hf-safetensors"
    assert manifest["compliance"]["clauses_covered"] == ["gdpr-art-30"]
    assert {m["name"] for m in manifest["members"]} == {"compliance-report.json", "sbom.spdx.json", "sbom.cdx.json"}
    assert json.loads(members["compliance-report.json"]) == REPORT
    result = verify_bundle(bundle, _trusted(pki))
    assert result.bundle_id == manifest["bundle_id"] and result.timestamp is None
    assert result.signer == "CN=MCP 2026 model signing,O=MCP 2026"


def test_sboms_validate_and_list_the_runtime_and_the_model(bundle, tmp_path):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    from spdx_tools.spdx.parser.parse_anything import parse_file
    from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

    members = _members(bundle)
    (tmp_path / "sbom.spdx.json").write_bytes(members["sbom.spdx.json"])
    document = parse_file(str(tmp_path / "sbom.spdx.json"))
    assert validate_full_spdx_document(document, "SPDX-2.3") == []
    names = {package.name for package in document.packages}
    assert {"tiny", "cryptography", "torch", "spdx-tools"} <= names
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(members["sbom.cdx.json"].decode()) is None
    cyclonedx = json.loads(members["sbom.cdx.json"])
    assert cyclonedx["metadata"]["component"]["type"] == "machine-learning-model"


def test_openssl_accepts_the_manifest_signature(bundle, pki, tmp_path, openssl):
    members = _members(bundle)
    for name in ("manifest.json", "manifest.json.p7s"):
        (tmp_path / name).write_bytes(members[name])
    verified = subprocess.run(
        [openssl, "cms", "-verify", "-binary", "-inform", "DER", "-in", str(tmp_path / "manifest.json.p7s"),
         "-content", str(tmp_path / "manifest.json"), "-CAfile", str(pki[0].ca_cert), "-purpose", "any",
         "-out", "/dev/null"], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stderr
    assert "Verification successful" in verified.stderr


def test_timestamped_bundle_verifies_here_and_with_openssl_ts(pki, tiny_copy, tsa, tmp_path, openssl):
    bundle = create_bundle(tiny_copy, tmp_path / "stamped.ceb", pki[1], tsa_url=tsa.url).path
    result = verify_bundle(bundle, _trusted(pki))
    assert tsa.num_requests == 1
    assert abs(result.timestamp - datetime.now(timezone.utc)) < timedelta(minutes=2)
    members = _members(bundle)
    for name in ("manifest.json.p7s", "manifest.json.p7s.tsr"):
        (tmp_path / name).write_bytes(members[name])
    checked = subprocess.run(
        [openssl, "ts", "-verify", "-data", str(tmp_path / "manifest.json.p7s"), "-in",
         str(tmp_path / "manifest.json.p7s.tsr"), "-CAfile", str(pki[0].ca_cert)], capture_output=True, text=True)
    assert checked.returncode == 0 and "Verification: OK" in checked.stdout, checked.stdout + checked.stderr


def test_a_changed_byte_names_the_member(bundle, pki):
    members = _members(bundle)
    members["sbom.spdx.json"] = members["sbom.spdx.json"].replace(b"SPDX-2.3", b"SPDX-2.4", 1)
    _rewrite(bundle, members)
    with pytest.raises(EvidenceError, match="member sbom.spdx.json changed after signing"):
        verify_bundle(bundle, _trusted(pki))


def test_a_flipped_byte_in_the_archive_names_the_member(pki, tiny_copy, tmp_path):
    bundle = tmp_path / "stored.ceb"
    create_bundle(tiny_copy, bundle, pki[1], REPORT)
    with zipfile.ZipFile(bundle) as archive:
        info = archive.getinfo("compliance-report.json")
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data = bytearray(bundle.read_bytes())
    data[start + 2] ^= 0x01
    bundle.write_bytes(bytes(data))
    with pytest.raises(EvidenceError, match="member compliance-report.json is corrupt"):
        verify_bundle(bundle, _trusted(pki))


def test_a_changed_manifest_fails_its_signature(bundle, pki):
    members = _members(bundle)
    members["manifest.json"] = members["manifest.json"].replace(b"gdpr-art-30", b"gdpr-art-31")
    _rewrite(bundle, members)
    with pytest.raises(EvidenceError, match="signature of manifest.json is refused: .*content changed after signing"):
        verify_bundle(bundle, _trusted(pki))


@pytest.mark.parametrize("dropped", ["sbom.cdx.json", "manifest.json.p7s"])
def test_a_missing_member_is_named(bundle, pki, dropped):
    members = _members(bundle)
    del members[dropped]
    _rewrite(bundle, members)
    with pytest.raises(EvidenceError, match=f"missing member {dropped}"):
        verify_bundle(bundle, _trusted(pki))


def test_an_unexpected_member_is_named(bundle, pki):
    _rewrite(bundle, {**_members(bundle), "extra.txt": b"x"})
    with pytest.raises(EvidenceError, match="unexpected member 'extra.txt'"):
        verify_bundle(bundle, _trusted(pki))


def test_the_bundle_is_checked_against_a_model_file(bundle, pki, tiny_copy, tmp_path):
    assert verify_bundle(bundle, _trusted(pki), model=tiny_copy).model_name == "tiny"
    other = tmp_path / "other.mcp"
    data = tiny_copy.read_bytes()
    other.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(EvidenceError, match="other.mcp is not the model of .*the bundle is for tiny.mcp"):
        verify_bundle(bundle, _trusted(pki), model=other)


def test_a_wrong_chain_is_refused(bundle, tmp_path):
    other = init_keys(tmp_path / "other-keys")
    with pytest.raises(EvidenceError, match="was not issued by a trusted CA"):
        verify_bundle(bundle, load_certificates(other.ca_cert))


def test_an_expired_certificate_is_refused(bundle, pki):
    with pytest.raises(EvidenceError, match="certificate 'CN=MCP 2026 model signing,O=MCP 2026' expired"):
        verify_bundle(bundle, _trusted(pki), at=datetime.now(timezone.utc) + timedelta(days=400))


def test_an_expired_certificate_cannot_sign(tiny_copy, tmp_path):
    old = init_keys(tmp_path / "old", days=1, not_before=datetime.now(timezone.utc) - timedelta(days=3))
    identity = load_identity(old.signing_key, old.signing_cert)
    with pytest.raises(EvidenceError, match="is not valid now"):
        create_bundle(tiny_copy, tmp_path / "x.ceb", identity)
    assert not (tmp_path / "x.ceb").exists()


def test_a_timestamp_over_other_data_is_bad(pki, tiny_copy, tsa, tmp_path):
    from mcp.governance.evidence.timestamp import request_timestamp

    bundle = create_bundle(tiny_copy, tmp_path / "stamped.ceb", pki[1], tsa_url=tsa.url).path
    members = _members(bundle)
    members["manifest.json.p7s.tsr"] = request_timestamp(tsa.url, b"some other signature")
    _rewrite(bundle, members)
    with pytest.raises(EvidenceError, match="bad timestamp in member manifest.json.p7s.tsr: .*does not cover"):
        verify_bundle(bundle, _trusted(pki))


def test_a_timestamp_from_an_untrusted_tsa_is_bad(pki, tiny_copy, tsa, tmp_path):
    bundle = create_bundle(tiny_copy, tmp_path / "stamped.ceb", pki[1], tsa_url=tsa.url).path
    other = init_keys(tmp_path / "other-keys")
    with pytest.raises(EvidenceError, match="bad timestamp .*does not verify against the trusted CAs"):
        verify_bundle(bundle, _trusted(pki), tsa_trusted=load_certificates(other.ca_cert))
    members = _members(bundle)
    del members["manifest.json.p7s.tsr"]
    _rewrite(bundle, members)
    with pytest.raises(EvidenceError, match="missing member manifest.json.p7s.tsr"):
        verify_bundle(bundle, _trusted(pki))


def test_cli_creates_and_verifies_and_names_the_cause_in_one_line(pki, tiny_copy, tmp_path, capsys):
    files, _ = pki
    report = tmp_path / "report.json"
    report.write_text(json.dumps(REPORT))
    out = tmp_path / "cli.ceb"
    identity = ["--key", str(files.signing_key), "--cert", str(files.signing_cert)]
    assert main(["bundle", "create", str(tiny_copy), "--out", str(out), "--report", str(report), *identity]) == 0
    assert main(["bundle", "verify", str(out), "--ca", str(files.ca_cert)]) == 0
    assert f"{out}: ok: bundle urn:uuid:" in capsys.readouterr().out
    members = _members(out)
    members["compliance-report.json"] = b"{}"
    _rewrite(out, members)
    assert main(["bundle", "verify", str(out), "--ca", str(files.ca_cert)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "member compliance-report.json changed after signing" in error
    assert main(["bundle", "verify", str(out), "--ca", str(files.ca_cert), "--at", "2099-01-01"]) == 2
    assert "expired" in capsys.readouterr().err


def test_cli_builds_the_compliance_report_now_without_report(pki, tiny_copy, tmp_path, capsys, monkeypatch):
    files, _ = pki
    identity = ["--key", str(files.signing_key), "--cert", str(files.signing_cert)]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "built.ceb"
    assert main(["bundle", "create", str(tiny_copy), "--out", str(out), *identity]) == 2
    assert "no compliance report: mcp-config.yaml does not exist" in capsys.readouterr().err
    config = tmp_path / "mcp-config.yaml"
    config.write_text(f"runtime:\n  device: cpu\nserving:\n  models: [{{name: tiny, source: {tiny_copy}}}]\n")
    assert main(["bundle", "create", str(tiny_copy), "--out", str(out), "--framework", "gdpr", *identity]) == 0
    members = _members(out)
    report = json.loads(members["compliance-report.json"])
    manifest = json.loads(members["manifest.json"])
    assert report["schema"] == "mcp2026.compliance-report/1" and report["framework"] == "gdpr"
    assert manifest["compliance"]["frameworks"] == ["gdpr"]
    assert manifest["compliance"]["summary"] == report["summary"]
    assert manifest["compliance"]["clauses_covered"] == [c["id"] for c in report["clauses"] if c["status"] == "met"]
    assert main(["bundle", "create", str(tiny_copy), "--out", str(out), "--no-report", *identity]) == 0
    assert "compliance-report.json" not in _members(out)


def test_cli_takes_keys_and_the_tsa_from_the_config(pki, tiny_copy, tsa, tmp_path, capsys):
    files, _ = pki
    config = tmp_path / "mcp-config.yaml"
    config.write_text(f"signing:\n  key_file: {files.signing_key}\n  cert_file: {files.signing_cert}\n"
                      f"  tsa_url: {tsa.url}\n")
    out = tmp_path / "configured.ceb"
    assert main(["bundle", "create", str(tiny_copy), "--out", str(out), "--config", str(config), "--no-report"]) == 0
    assert "timestamped" in capsys.readouterr().out and tsa.num_requests == 1
    assert main(["bundle", "verify", str(out), "--ca", str(files.ca_cert)]) == 0
    assert ", timestamped 20" in capsys.readouterr().out
