"""SEV-SNP reports: parsing the documented layout, the VCEK signature, the ARK -> ASK -> VCEK
chain, and the binding of nonce, instance key and log in report_data.

No real SNP hardware is exercised here: the reports are built by these tests to the layout of
AMD's SEV-SNP ABI specification and signed by test keys (an RSA-PSS ARK and ASK, an ECDSA P-384
VCEK). ``sev_guest.get_report``, which asks /dev/sev-guest, runs only inside an SNP guest.
"""

from __future__ import annotations

import datetime
import hashlib
import struct

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

from mcp.governance.attestation.attestor import Attestor
from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.evidence import EvidenceContext, snp_report_data
from mcp.governance.attestation.keys import InstanceKey
from mcp.governance.attestation.log import MeasurementLog
from mcp.governance.attestation.reference import reference_from_evidence
from mcp.governance.attestation.snp_report import REPORT_SIZE, SnpReport, check_report
from mcp.governance.attestation.verify import verify_evidence

NONCE = "0123456789abcdef0123456789abcdef"
MEASUREMENT = hashlib.sha384(b"guest image").digest()
PSS = padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48)


def _cert(subject: str, public_key, issuer: str, signing_key) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)])).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now)
               .not_valid_after(now + datetime.timedelta(days=1)))
    return builder.sign(signing_key, hashes.SHA384(), rsa_padding=PSS)


@pytest.fixture(scope="module")
def amd():
    """Test keys in AMD's shapes (RSA 2048 here to keep the tests fast; AMD's ARK/ASK are 4096)."""
    ark_key = rsa.generate_private_key(65537, 2048)
    ask_key = rsa.generate_private_key(65537, 2048)
    vcek_key = ec.generate_private_key(ec.SECP384R1())
    ark = _cert("ARK-Test", ark_key.public_key(), "ARK-Test", ark_key)
    ask = _cert("SEV-Test", ask_key.public_key(), "ARK-Test", ark_key)
    vcek = _cert("SEV-VCEK", vcek_key.public_key(), "SEV-Test", ask_key)
    return {"ark": ark, "ask": ask, "vcek": vcek, "vcek_key": vcek_key, "ask_key": ask_key}


def build_report(report_data: bytes, vcek_key, measurement: bytes = MEASUREMENT, algo: int = 1) -> bytes:
    """A report laid out as the ABI spec's ATTESTATION_REPORT, signed like the secure processor does."""
    raw = bytearray(REPORT_SIZE)
    struct.pack_into("<IIQ", raw, 0x00, 2, 7, 0x30000)  # version, guest_svn, policy
    struct.pack_into("<IIQQ", raw, 0x30, 0, algo, 0x1B00000000000003, 1)  # vmpl, algo, TCB, platform_info
    raw[0x50:0x90], raw[0x90:0xC0], raw[0x1A0:0x1E0] = report_data, measurement, b"\xc4" * 64
    r, s = decode_dss_signature(vcek_key.sign(bytes(raw[:0x2A0]), ec.ECDSA(hashes.SHA384())))
    raw[0x2A0:0x2E8], raw[0x2E8:0x330] = r.to_bytes(72, "little"), s.to_bytes(72, "little")
    return bytes(raw)


class SigningSecureProcessor:
    """The evidence provider's part on a real guest (an SNP_GET_REPORT), played with test keys."""

    name = "sev_snp"

    def __init__(self, vcek_key, measurement: bytes = MEASUREMENT) -> None:
        self.vcek_key, self.measurement = vcek_key, measurement

    def report(self, context: EvidenceContext) -> dict:
        data = snp_report_data(context.nonce, context.instance_public_key, context.pcrs[23])
        return {"report": build_report(data, self.vcek_key, self.measurement).hex()}

    def close(self) -> None:
        """Holds nothing."""


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _evidence(tmp_path, provider) -> dict:
    attestor = Attestor(MeasurementLog(), InstanceKey.from_file(tmp_path / "attestation.key"), (provider,))
    attestor.log.extend("code", "mcp2026 test", "ab" * 32)
    return attestor.evidence(NONCE)


def _reference(evidence: dict, amd: dict, tmp_path) -> dict:
    folder = tmp_path / "amd"
    folder.mkdir(exist_ok=True)
    for name in ("ark", "ask"):
        (folder / f"{name}.pem").write_text(_pem(amd[name]))
    (folder / "vcek.der").write_bytes(amd["vcek"].public_bytes(serialization.Encoding.DER))  # as AMD's KDS serves it
    return reference_from_evidence(evidence, folder)


def test_parse_reads_the_documented_offsets(amd):
    report = SnpReport.parse(build_report(b"\x11" * 64, amd["vcek_key"]))
    assert (report.version, report.guest_svn, report.policy, report.signature_algo) == (2, 7, 0x30000, 1)
    assert report.report_data == b"\x11" * 64 and report.measurement == MEASUREMENT
    assert report.chip_id == b"\xc4" * 64 and report.platform_version == 0x1B00000000000003
    assert check_report(report, amd["ark"], amd["ask"], amd["vcek"]) == []
    with pytest.raises(AttestationError, match="1184 bytes; this one is 100"):
        SnpReport.parse(b"\0" * 100)


def test_flipped_report_byte_breaks_the_vcek_signature(amd):
    raw = bytearray(build_report(b"\x11" * 64, amd["vcek_key"]))
    raw[0x90] ^= 1
    assert check_report(SnpReport.parse(bytes(raw)), amd["ark"], amd["ask"], amd["vcek"]) == \
        ["SEV-SNP: the report's signature does not verify with the VCEK"]


def test_vcek_from_another_ask_breaks_the_chain(amd):
    other_ask = rsa.generate_private_key(65537, 2048)
    stray_vcek = _cert("SEV-VCEK", amd["vcek_key"].public_key(), "SEV-Test", other_ask)
    report = SnpReport.parse(build_report(b"\x11" * 64, amd["vcek_key"]))
    assert check_report(report, amd["ark"], amd["ask"], stray_vcek) == \
        ["SEV-SNP: certificate chain: the VCEK is not signed by the ASK"]


def test_evidence_with_an_snp_report_verifies_end_to_end(amd, tmp_path):
    evidence = _evidence(tmp_path, SigningSecureProcessor(amd["vcek_key"]))
    assert SnpReport.parse(bytes.fromhex(evidence["sev_snp"]["report"])).measurement == MEASUREMENT
    reference = _reference(evidence, amd, tmp_path)
    assert reference["sev_snp"]["measurement"] == MEASUREMENT.hex()
    assert verify_evidence(evidence, reference, NONCE) == []


def test_other_launch_measurement_and_unbound_report_data_are_named(amd, tmp_path):
    reference = _reference(_evidence(tmp_path, SigningSecureProcessor(amd["vcek_key"])), amd, tmp_path)
    other = hashlib.sha384(b"other image").digest()
    problems = verify_evidence(_evidence(tmp_path, SigningSecureProcessor(amd["vcek_key"], other)), reference, NONCE)
    assert problems == [f"SEV-SNP measurement: expected {MEASUREMENT.hex()}, got {other.hex()}"]

    class ReplayingProcessor(SigningSecureProcessor):  # an old report, bound to another nonce
        def report(self, context):
            return {"report": build_report(b"\0" * 64, self.vcek_key).hex()}

    problems = verify_evidence(_evidence(tmp_path, ReplayingProcessor(amd["vcek_key"])), reference, NONCE)
    assert len(problems) == 1 and problems[0].startswith("SEV-SNP: report_data is 0000")


def test_report_without_a_chain_in_the_reference_is_a_problem(amd, tmp_path):
    evidence = _evidence(tmp_path, SigningSecureProcessor(amd["vcek_key"]))
    assert verify_evidence(evidence, reference_from_evidence(evidence), NONCE) == \
        ["SEV-SNP: the evidence has a report but the reference has no ark/ask/vcek to check it with "
         "(`mcp2026 attest reference --snp-certs DIR`)"]
