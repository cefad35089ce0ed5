"""AMD SEV-SNP attestation reports: the layout, and checking one against the AMD key chain.

The 0x4A0-byte ATTESTATION_REPORT of AMD's SEV-SNP ABI specification (fields used here):

    0x000 version u32     0x004 guest_svn u32    0x008 policy u64
    0x010 family_id 16    0x020 image_id 16      0x030 vmpl u32     0x034 signature_algo u32
    0x038 platform_version (current TCB) u64     0x040 platform_info u64
    0x050 report_data 64  0x090 measurement 48   0x0C0 host_data 32
    0x0E0 id_key_digest 48  0x110 author_key_digest 48  0x140 report_id 32
    0x180 reported_tcb u64  0x1A0 chip_id 64     0x2A0 signature: r, s (72 bytes each, little-endian)

The signature (algorithm 1: ECDSA P-384 with SHA-384) covers bytes 0x000..0x29F and is made
with the chip's VCEK, whose certificate the ASK signs, whose certificate the ARK signs (AMD's
root, self-signed; RSA-PSS SHA-384 in AMD's certificates).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from mcp.governance.attestation.errors import AttestationError

REPORT_SIZE = 0x4A0
SIGNED_SIZE = 0x2A0
SIGNATURE_OFFSET = 0x2A0
COMPONENT_SIZE = 72  # r and s, little-endian, zero-padded
ECDSA_P384_SHA384 = 1


@dataclass(frozen=True)
class SnpReport:
    version: int
    guest_svn: int
    policy: int
    family_id: bytes
    image_id: bytes
    vmpl: int
    signature_algo: int
    platform_version: int
    platform_info: int
    report_data: bytes
    measurement: bytes
    host_data: bytes
    id_key_digest: bytes
    author_key_digest: bytes
    report_id: bytes
    reported_tcb: int
    chip_id: bytes
    signature_r: int
    signature_s: int
    raw: bytes

    @classmethod
    def parse(cls, raw: bytes) -> SnpReport:
        if len(raw) < REPORT_SIZE:
            raise AttestationError(f"an SEV-SNP report is {REPORT_SIZE} bytes; this one is {len(raw)}")
        raw = bytes(raw[:REPORT_SIZE])
        version, guest_svn, policy = struct.unpack_from("<IIQ", raw, 0x00)
        vmpl, signature_algo, platform_version, platform_info = struct.unpack_from("<IIQQ", raw, 0x30)
        (reported_tcb,) = struct.unpack_from("<Q", raw, 0x180)
        r = int.from_bytes(raw[SIGNATURE_OFFSET:SIGNATURE_OFFSET + COMPONENT_SIZE], "little")
        s = int.from_bytes(raw[SIGNATURE_OFFSET + COMPONENT_SIZE:SIGNATURE_OFFSET + 2 * COMPONENT_SIZE], "little")
        return cls(version, guest_svn, policy, raw[0x10:0x20], raw[0x20:0x30], vmpl, signature_algo,
                   platform_version, platform_info, raw[0x50:0x90], raw[0x90:0xC0], raw[0xC0:0xE0],
                   raw[0xE0:0x110], raw[0x110:0x140], raw[0x140:0x160], reported_tcb, raw[0x1A0:0x1E0], r, s, raw)

    def summary(self) -> dict:
        """The fields a reader checks, hex where binary."""
        return {"version": self.version, "guest_svn": self.guest_svn, "policy": f"{self.policy:#x}",
                "vmpl": self.vmpl, "signature_algo": self.signature_algo,
                "platform_version": f"{self.platform_version:#018x}", "measurement": self.measurement.hex(),
                "report_data": self.report_data.hex(), "host_data": self.host_data.hex(),
                "chip_id": self.chip_id.hex(), "reported_tcb": f"{self.reported_tcb:#018x}"}


def check_report(report: SnpReport, ark: x509.Certificate, ask: x509.Certificate,
                 vcek: x509.Certificate) -> list[str]:
    """Problems with the report's signature and the ARK -> ASK -> VCEK chain; empty if none."""
    problems = [f"SEV-SNP: {p}" for p in _chain_problems(ark, ask, vcek)]
    if report.signature_algo != ECDSA_P384_SHA384:
        return [*problems, f"SEV-SNP: report signature_algo is {report.signature_algo}, "
                           f"expected {ECDSA_P384_SHA384} (ECDSA P-384 SHA-384)"]
    key = vcek.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp384r1":
        return [*problems, "SEV-SNP: the VCEK certificate's key is not an ECDSA P-384 key"]
    try:
        key.verify(encode_dss_signature(report.signature_r, report.signature_s), report.raw[:SIGNED_SIZE],
                   ec.ECDSA(hashes.SHA384()))
    except InvalidSignature:
        problems.append("SEV-SNP: the report's signature does not verify with the VCEK")
    return problems


def _chain_problems(ark: x509.Certificate, ask: x509.Certificate, vcek: x509.Certificate) -> list[str]:
    problems = []
    for subject, issuer, what in ((ark, ark, "ARK is not self-signed"), (ask, ark, "ASK is not signed by the ARK"),
                                  (vcek, ask, "VCEK is not signed by the ASK")):
        if not signed_by(subject, issuer):
            problems.append(f"certificate chain: the {what}")
    return problems


def signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """Whether ``issuer``'s key made ``cert``'s signature (RSA PKCS#1 v1.5 or PSS, or ECDSA)."""
    key = issuer.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            scheme = cert.signature_algorithm_parameters
            if not isinstance(scheme, (padding.PSS, padding.PKCS1v15)):
                return False
            key.verify(cert.signature, cert.tbs_certificate_bytes, scheme, cert.signature_hash_algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        else:
            return False
    except (InvalidSignature, ValueError, TypeError):
        return False
    return cert.issuer == issuer.subject


def load_certificate(data: bytes, what: str) -> x509.Certificate:
    """A PEM or DER certificate (AMD's KDS serves VCEKs as DER, chains as PEM)."""
    try:
        return x509.load_pem_x509_certificate(data) if data.lstrip().startswith(b"-----") \
            else x509.load_der_x509_certificate(data)
    except ValueError as exc:
        raise AttestationError(f"the {what} certificate is neither PEM nor DER ({exc})") from None
