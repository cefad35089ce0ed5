"""``mcp2026 attest`` measured in-process from a config, ``attest reference`` and ``attest verify``:
exit status, one problem a line, clear errors for bad input."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from mcp.commands.cli import main

NONCE = "c0ffee00" * 4


@pytest.fixture
def config_file(tiny_mcp, tmp_path):
    shutil.copy(tiny_mcp, tmp_path / "tiny.mcp")
    path = tmp_path / "mcp-config.yaml"
    path.write_text(yaml.safe_dump({
        "serving": {"models": [{"name": "tiny", "source": "tiny.mcp"}], "governance": {"audit": False}},
        "attestation": {"key_file": "attestation.key"}}))
    return path


def test_local_evidence_reference_and_verify(config_file, tmp_path, capsys):
    evidence_path, reference_path = tmp_path / "evidence.json", tmp_path / "reference.json"
    assert main(["attest", "--config", str(config_file), "--nonce", NONCE, "-o", str(evidence_path)]) == 0
    evidence = json.loads(evidence_path.read_text())
    assert [e["kind"] for e in evidence["log"]] == ["code", "config", "policy", "model"]
    assert evidence["log"][2]["name"] == "shipped" and evidence["serving"] == {"tiny": "tiny:1"}
    assert (tmp_path / "attestation.key").stat().st_mode & 0o777 == 0o600
    assert main(["attest", "reference", "--config", str(config_file), "-o", str(reference_path)]) == 0
    capsys.readouterr()
    assert main(["attest", "verify", str(evidence_path), "--expect", str(reference_path), "--nonce", NONCE]) == 0
    assert capsys.readouterr().out.startswith("attestation ok: 4 events")


def test_verify_prints_each_problem_on_its_own_line(config_file, tmp_path, capsys):
    evidence_path, reference_path = tmp_path / "evidence.json", tmp_path / "reference.json"
    main(["attest", "--config", str(config_file), "--nonce", NONCE, "-o", str(evidence_path)])
    main(["attest", "reference", "--evidence", str(evidence_path), "-o", str(reference_path)])
    reference = json.loads(reference_path.read_text())
    reference["measurements"][3]["digest"] = "00" * 32
    reference["instance_public_key"] = "AAAA"
    reference_path.write_text(json.dumps(reference))
    capsys.readouterr()
    assert main(["attest", "verify", str(evidence_path), "--expect", str(reference_path), "--nonce", "ab" * 8]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("instance key: expected AAAA, got ")
    assert lines[1] == f"nonce: expected {'ab' * 8}, got {NONCE}"
    assert lines[2].startswith(f"event 3 (model tiny:1): expected {'00' * 32}, got ")
    assert len(lines) == 3


def test_bad_input_is_one_line_exit_2(config_file, tmp_path, capsys):
    assert main(["attest", "--config", str(config_file), "--nonce", "xyz!"]) == 2
    assert "neither hex nor base64url" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{")
    assert main(["attest", "verify", str(tmp_path / "broken.json"), "--expect", str(tmp_path / "broken.json")]) == 2
    assert "is not readable JSON" in capsys.readouterr().err
    assert main(["attest", "--url", "http://127.0.0.1:1", "--nonce", NONCE]) == 2
    assert "cannot get evidence from http://127.0.0.1:1/attestation" in capsys.readouterr().err
