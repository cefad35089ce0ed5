"""The TPM provider against a real software TPM (swtpm): the PCR follows the log, quotes carry
the nonce and verify with the attestation key, and a quote that does not match is named."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp.config.attestation import AttestationConfig, TpmConfig
from mcp.governance.attestation.attestor import Attestor
from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.evidence import signed_part
from mcp.governance.attestation.keys import InstanceKey
from mcp.governance.attestation.log import MeasurementEvent, MeasurementLog, replay
from mcp.governance.attestation.reference import reference_from_evidence
from mcp.governance.attestation.tpm_quote import Quote
from mcp.governance.attestation.verify import verify_evidence

NONCE = "a1" * 32


@pytest.fixture
def tpm_attestor(swtpm, tmp_path):
    attestor = Attestor.from_config(AttestationConfig(str(tmp_path / "attestation.key"), 23, TpmConfig(swtpm)))
    yield attestor
    attestor.close()


def test_quote_binds_nonce_and_pcr_and_verifies(tpm_attestor):
    tpm_attestor.log.extend("code", "mcp2026 test", hashlib.sha256(b"code").hexdigest())
    tpm_attestor.log.extend("model", "tiny:1", hashlib.sha256(b"model").hexdigest())
    evidence = tpm_attestor.evidence(NONCE)
    quote = Quote.parse(bytes.fromhex(evidence["tpm"]["quote"]))
    assert quote.extra_data == bytes.fromhex(NONCE)
    assert quote.pcr_selection == ((0x000B, (23,)),)
    assert evidence["tpm"]["pcr_values"] == {"23": evidence["pcrs"]["23"]}
    assert verify_evidence(evidence, reference_from_evidence(evidence), NONCE) == []


def test_ak_is_the_same_after_a_restart(swtpm, tmp_path):
    config = AttestationConfig(str(tmp_path / "attestation.key"), 23, TpmConfig(swtpm))
    first = Attestor.from_config(config)
    first.close()
    second = Attestor.from_config(config)
    second.close()
    assert first.providers[0].ak_public_pem == second.providers[0].ak_public_pem


def test_pcr_extended_outside_the_log_is_named(tpm_attestor):
    tpm_attestor.log.extend("code", "mcp2026 test", hashlib.sha256(b"code").hexdigest())
    reference = reference_from_evidence(tpm_attestor.evidence(NONCE))
    stray = MeasurementEvent(23, "model", "hidden", "ee" * 32)
    tpm_attestor.providers[0].extend(stray)  # measured into the TPM, left out of the log
    problems = verify_evidence(tpm_attestor.evidence(NONCE), reference, NONCE)
    assert len(problems) == 1 and problems[0].startswith("TPM: PCR 23 is ")
    assert problems[0].endswith(f"the replayed log gives {replay(tpm_attestor.log.events())[23]}")


def test_forged_quote_and_other_ak_are_named(tpm_attestor, swtpm, tmp_path):
    tpm_attestor.log.extend("code", "mcp2026 test", hashlib.sha256(b"code").hexdigest())
    evidence = tpm_attestor.evidence(NONCE)
    reference = reference_from_evidence(evidence)
    other = Attestor(MeasurementLog(), InstanceKey.from_file(tmp_path / "attestation.key"))
    other.log.extend("code", "mcp2026 test", hashlib.sha256(b"code").hexdigest())
    forged = other.evidence(NONCE)
    attest = bytearray.fromhex(evidence["tpm"]["quote"])
    attest[-1] ^= 1  # the PCR digest's last byte
    forged["tpm"] = {**evidence["tpm"], "quote": attest.hex()}
    forged["signature"] = other.key.sign(signed_part(forged))
    problems = verify_evidence(forged, reference, NONCE)
    assert "TPM: the quote's signature does not verify with the attestation key (ak_public)" in problems
    assert "TPM: the quoted PCR digest does not match the reported PCR values" in problems
    other_ak = ec.generate_private_key(ec.SECP256R1()).public_key()
    reference["tpm_ak_public"] = other_ak.public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert "TPM: the attestation key is not the one the reference pins (tpm_ak_public)" in \
        verify_evidence(evidence, reference, NONCE)


def test_unreachable_tpm_is_a_clear_error(tmp_path):
    pytest.importorskip("tpm2_pytss", reason="pip install 'mcp2026[attestation]' (needs libtss2-dev)")
    config = AttestationConfig(str(tmp_path / "attestation.key"), 23, TpmConfig("swtpm:host=127.0.0.1,port=1"))
    with pytest.raises(AttestationError, match="cannot reach the TPM"):
        Attestor.from_config(config)
