"""Evidence made with a software log and a real instance key, checked by the verifier: each
tampering is named (which event, expected against got), and good evidence passes."""

from __future__ import annotations

import copy
import hashlib
import os
import stat

import pytest

from mcp.governance.attestation.attestor import Attestor
from mcp.governance.attestation.errors import NonceError
from mcp.governance.attestation.keys import InstanceKey
from mcp.governance.attestation.log import MeasurementLog
from mcp.governance.attestation.reference import reference_from_evidence
from mcp.governance.attestation.verify import verify_evidence

NONCE = "00112233445566778899aabbccddeeff"
MODEL_DIGEST = hashlib.sha256(b"model bytes").hexdigest()


@pytest.fixture
def attestor(tmp_path) -> Attestor:
    attestor = Attestor(MeasurementLog(), InstanceKey.from_file(tmp_path / "attestation.key"))
    attestor.log.extend("code", "mcp2026 test", hashlib.sha256(b"code").hexdigest())
    attestor.log.extend("config", "mcp-config.yaml", hashlib.sha256(b"config").hexdigest())
    attestor.log.extend("model", "tiny:1", MODEL_DIGEST)
    return attestor


def test_instance_key_is_created_0600_and_reused(tmp_path):
    path = tmp_path / "home" / "attestation.key"
    first = InstanceKey.from_file(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert InstanceKey.from_file(path).public_b64 == first.public_b64


def test_good_evidence_passes(attestor):
    evidence = attestor.evidence(NONCE, {"tiny": "tiny:1"})
    assert evidence["serving"] == {"tiny": "tiny:1"} and evidence["pcrs"].keys() == {"23"}
    assert verify_evidence(evidence, reference_from_evidence(evidence), NONCE, max_age_s=60) == []


@pytest.mark.parametrize("nonce, message", [
    (None, "the nonce is missing"), ("", "the nonce is missing"), ("ab" * 65, "over the 128 allowed"),
    ("not hex!", "neither hex nor base64url"), ("abcd", "the nonce is 2 bytes"),
])
def test_bad_nonces_are_refused(attestor, nonce, message):
    with pytest.raises(NonceError, match=message):
        attestor.evidence(nonce)


def test_base64url_nonce_is_accepted(attestor):
    evidence = attestor.evidence("q83vEjRWeJq83vEjRWeJ-_")
    assert verify_evidence(evidence, reference_from_evidence(evidence), "q83vEjRWeJq83vEjRWeJ-_") == []


def test_changed_model_digest_is_named(attestor):
    reference = reference_from_evidence(attestor.evidence(NONCE))
    tampered = Attestor(MeasurementLog(), attestor.key)
    for event in attestor.log.events():
        digest = hashlib.sha256(b"other model").hexdigest() if event.kind == "model" else event.digest
        tampered.log.extend(event.kind, event.name, digest)
    problems = verify_evidence(tampered.evidence(NONCE), reference, NONCE)
    assert problems == [f"event 2 (model tiny:1): expected {MODEL_DIGEST}, "
                        f"got {hashlib.sha256(b'other model').hexdigest()}"]


def test_edited_evidence_fails_its_signature_and_replay(attestor):
    evidence = attestor.evidence(NONCE)
    reference = reference_from_evidence(evidence)
    edited = copy.deepcopy(evidence)
    edited["log"][2]["digest"] = "00" * 32
    problems = verify_evidence(edited, reference, NONCE)
    assert problems[0].startswith("instance signature: does not verify")
    assert any(p.startswith("PCR 23: the evidence reports") for p in problems)
    assert f"event 2 (model tiny:1): expected {MODEL_DIGEST}, got {'00' * 32}" in problems


def test_wrong_nonce_old_evidence_and_other_key_are_named(attestor, tmp_path):
    evidence = attestor.evidence(NONCE)
    reference = {**reference_from_evidence(evidence),
                 "instance_public_key": InstanceKey.from_file(tmp_path / "other.key").public_b64}
    problems = verify_evidence(evidence, reference, "ff" * 16, max_age_s=10, now=evidence["time"] + 100)
    assert f"nonce: expected {'ff' * 16}, got {NONCE}" in problems
    assert "time: the evidence is 100 s old, over --max-age 10" in problems
    assert any(p.startswith("instance key: expected") for p in problems)


def test_missing_and_unexpected_measurements_are_named(attestor):
    reference = reference_from_evidence(attestor.evidence(NONCE))
    reference["measurements"].append({"kind": "policy", "name": "shipped", "digest": "11" * 32})
    attestor.log.extend("model", "tiny:2", "22" * 32)
    problems = verify_evidence(attestor.evidence(NONCE), reference, NONCE)
    assert problems == [f"event 3 (model tiny:2): not in the reference (got {'22' * 32})",
                        f"policy shipped: in the reference but not measured (expected {'11' * 32})"]


def test_swap_adds_an_event_with_the_loaded_digest(attestor):
    attestor.log.extend("model", "tiny:2", "22" * 32)
    event = attestor.measure_activation("tiny:1")
    assert (event.name, event.digest) == ("tiny:1", MODEL_DIGEST)
    assert len(attestor.log.events()) == 5


def test_policy_reload_is_measured_once_per_version(attestor):
    assert attestor.observe_policy("shipped", "aa" * 32) is not None
    assert attestor.observe_policy("shipped", "aa" * 32) is None
    assert attestor.observe_policy("shipped", "bb" * 32).digest == "bb" * 32
    assert attestor.observe_policy("opa:http://opa:8181", "opa:http://opa:8181").digest == \
        hashlib.sha256(b"opa:http://opa:8181").hexdigest()
