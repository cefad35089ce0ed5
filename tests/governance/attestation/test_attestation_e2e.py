"""End to end: a real ``mcp2026 serve`` with a software TPM (swtpm) answers GET /attestation,
``mcp2026 attest reference`` / ``attest verify`` pass its evidence, and a server started on a
model file or a config with one byte changed is caught, the difference named."""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

import httpx
import pytest

from mcp.commands.cli import main


def _config(models: Path, model: Path, tmp_path: Path, tcti: str, max_tokens: int = 256) -> dict:
    return {"runtime": {"model_dir": str(models)}, "generation": {"max_tokens": max_tokens},
            "serving": {"models": [{"name": "tiny", "source": str(model)}]},
            "attestation": {"key_file": str(tmp_path / "attestation.key"), "tpm": {"tcti": tcti}}}


def _evidence(server, nonce: str, path: Path) -> dict:
    response = httpx.get(server.url + "/attestation", params={"nonce": nonce}, timeout=30)
    assert response.status_code == 200, response.text
    path.write_text(response.text)
    return response.json()


def _verify(capsys, evidence: Path, reference: Path, nonce: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    status = main(["attest", "verify", str(evidence), "--expect", str(reference), "--nonce", nonce,
                   "--max-age", "300"])
    return status, capsys.readouterr().out.splitlines()


@pytest.fixture
def model_copy(tiny_mcp: Path, tmp_path: Path) -> tuple[Path, Path]:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(tiny_mcp, models / "tiny.mcp")
    return models, models / "tiny.mcp"


@pytest.mark.slow
def test_evidence_verifies_and_a_changed_model_or_config_is_named(start_server, model_copy, swtpm, tmp_path,
                                                                   capsys):
    models, model = model_copy
    config = _config(models, model, tmp_path, swtpm)
    server = start_server(config)
    nonce = secrets.token_hex(32)
    evidence = _evidence(server, nonce, tmp_path / "evidence.json")
    assert [(e["kind"], e["name"]) for e in evidence["log"]][1:] == [("config", "mcp-config.yaml"),
                                                                     ("model", "tiny:1")]
    assert evidence["serving"] == {"tiny": "tiny:1"} and evidence["tpm"]["pcr_values"] == evidence["pcrs"]
    for bad, message in ((None, "the nonce is missing"), ("no+such/nonce!", "neither hex nor base64url"),
                         ("ab" * 65, "over the 128 allowed"), ("abcd", "the nonce is 2 bytes")):
        response = httpx.get(server.url + "/attestation", params={} if bad is None else {"nonce": bad})
        assert response.status_code == 400 and message in response.json()["error"]["message"]
    reference = tmp_path / "reference.json"
    assert main(["attest", "reference", "--evidence", str(tmp_path / "evidence.json"), "-o", str(reference)]) == 0
    status, lines = _verify(capsys, tmp_path / "evidence.json", reference, nonce)
    assert status == 0 and lines[-1].startswith("attestation ok: 3 events")
    assert _verify(capsys, tmp_path / "evidence.json", reference, secrets.token_hex(32))[0] == 2
    server.stop()

    good_digest = evidence["log"][2]["digest"]
    data = bytearray(model.read_bytes())
    data[-64] ^= 0x01  # one byte of the last tensor's data
    model.write_bytes(bytes(data))
    tampered = start_server(config)
    _evidence(tampered, nonce, tmp_path / "tampered-model.json")
    tampered.stop()
    status, lines = _verify(capsys, tmp_path / "tampered-model.json", reference, nonce)
    assert status == 2 and lines[0].startswith(f"event 2 (model tiny:1): expected {good_digest}, got ")
    assert len(lines) == 1  # the TPM quote itself is good: only the measurement differs

    data[-64] ^= 0x01
    model.write_bytes(bytes(data))
    reconfigured = start_server(_config(models, model, tmp_path, swtpm, max_tokens=255))
    _evidence(reconfigured, nonce, tmp_path / "tampered-config.json")
    reconfigured.stop()
    status, lines = _verify(capsys, tmp_path / "tampered-config.json", reference, nonce)
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"event 1 (config mcp-config.yaml): expected {evidence['log'][1]['digest']}, got ")


@pytest.mark.slow
def test_loading_and_swapping_a_model_extend_the_log(start_server, model_copy, swtpm, tmp_path, capsys):
    models, model = model_copy
    server = start_server(_config(models, model, tmp_path, swtpm))
    load = httpx.post(server.url + "/admin/models", json={"name": "tiny", "source": str(model), "version": "2",
                                                          "activate": False}, timeout=120)
    assert load.status_code == 200, load.text
    assert httpx.post(server.url + "/admin/models/tiny/swap", json={"version": "2"}).status_code == 200
    nonce = secrets.token_hex(16)
    evidence = _evidence(server, nonce, tmp_path / "evidence.json")
    assert [(e["kind"], e["name"]) for e in evidence["log"]][2:] == [("model", "tiny:1"), ("model", "tiny:2"),
                                                                     ("model", "tiny:2")]
    assert evidence["serving"] == {"tiny": "tiny:2"}
    reference = tmp_path / "reference.json"
    assert main(["attest", "reference", "--evidence", str(tmp_path / "evidence.json"), "-o", str(reference)]) == 0
    assert _verify(capsys, tmp_path / "evidence.json", reference, nonce)[0] == 0
    assert json.loads(reference.read_text())["tpm_ak_public"] == evidence["tpm"]["ak_public"]
