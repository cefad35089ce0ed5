"""Detached CMS (PKCS#7) signatures in DER, as ``openssl cms -verify -binary`` reads them.

``cryptography`` makes them (``PKCS7SignatureBuilder``, detached, binary) but cannot verify
them; ``verify_detached`` reads the structure with ``asn1crypto`` and checks it with
``cryptography``: the content's digest against the signed ``messageDigest`` attribute, the
signer's signature over the signed attributes, and the signer's certificate path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone

from asn1crypto import cms
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.serialization import pkcs7

from mcp.governance.errors import SigningError
from mcp.governance.signing.chain import verify_chain
from mcp.governance.signing.keys import SigningIdentity

_DIGESTS = {"sha256": (hashlib.sha256, hashes.SHA256), "sha384": (hashlib.sha384, hashes.SHA384),
            "sha512": (hashlib.sha512, hashes.SHA512)}


@dataclass(frozen=True)
class SignatureInfo:
    """What a verified signature says: who signed, and their certificate path."""

    signer: x509.Certificate
    path: tuple[x509.Certificate, ...]

    @property
    def signer_name(self) -> str:
        return self.signer.subject.rfc4514_string()


def sign_detached(content: bytes, identity: SigningIdentity) -> bytes:
    """A DER CMS SignedData over ``content`` (not included), carrying the signer's chain."""
    builder = pkcs7.PKCS7SignatureBuilder().set_data(content).add_signer(
        identity.certificate, identity.key, hashes.SHA256())
    for certificate in identity.chain:
        builder = builder.add_certificate(certificate)
    options = [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary]
    return builder.sign(serialization.Encoding.DER, options)


def verify_detached(signature: bytes, content: bytes, trusted: list[x509.Certificate],
                    at: datetime | None = None) -> SignatureInfo:
    """Check a detached CMS signature over ``content``; a ``SigningError`` says what failed."""
    signed_data = _signed_data(signature)
    signer_info = _signer_info(signed_data)
    certificates = _certificates(signed_data)
    signer = _signer_certificate(signer_info, certificates)
    digest_name = signer_info["digest_algorithm"]["algorithm"].native
    if digest_name not in _DIGESTS:
        raise SigningError(f"the signature uses digest {digest_name}; supported: {', '.join(_DIGESTS)}")
    hasher, hash_type = _DIGESTS[digest_name]
    signed_attrs = signer_info["signed_attrs"]
    if not signed_attrs:
        raise SigningError("the signature has no signed attributes; sign with `mcp2026 sign` or `openssl cms -sign`")
    if _message_digest(signed_attrs) != hasher(content).digest():
        raise SigningError("the signed content does not match the signature: the content changed after signing")
    attrs_der = b"\x31" + signed_attrs.dump()[1:]  # signed as a SET OF, stored [0] IMPLICIT
    _check_signature(signer, signer_info["signature"].native, attrs_der, hash_type())
    path = verify_chain(signer, [c for c in certificates if c != signer], trusted, at or datetime.now(timezone.utc))
    return SignatureInfo(signer, tuple(path))


def _signed_data(signature: bytes) -> cms.SignedData:
    try:
        info = cms.ContentInfo.load(signature)
        if info["content_type"].native != "signed_data":
            raise ValueError(f"content type {info['content_type'].native}")
        signed_data = info["content"]
        signed_data["signer_infos"].native  # parse it all now: asn1crypto parses lazily
        return signed_data
    except (ValueError, TypeError, KeyError) as exc:
        raise SigningError(f"the signature is not a DER CMS SignedData ({exc})") from None


def _signer_info(signed_data: cms.SignedData) -> cms.SignerInfo:
    infos = signed_data["signer_infos"]
    if len(infos) != 1:
        raise SigningError(f"the signature has {len(infos)} signers; exactly one is expected")
    return infos[0]


def _certificates(signed_data: cms.SignedData) -> list[x509.Certificate]:
    certificates = []
    for choice in signed_data["certificates"] or []:
        if choice.name == "certificate":
            certificates.append(x509.load_der_x509_certificate(choice.chosen.dump()))
    return certificates


def _signer_certificate(signer_info: cms.SignerInfo, certificates: list[x509.Certificate]) -> x509.Certificate:
    sid = signer_info["sid"]
    if sid.name != "issuer_and_serial_number":
        raise SigningError("the signer is named by key identifier; sign with issuer and serial number")
    issuer_der, serial = sid.chosen["issuer"].dump(), sid.chosen["serial_number"].native
    for certificate in certificates:
        if certificate.serial_number == serial and certificate.issuer.public_bytes() == issuer_der:
            return certificate
    raise SigningError("the signer's certificate is not in the signature; sign with the certificate included")


def _message_digest(signed_attrs: cms.CMSAttributes) -> bytes:
    for attribute in signed_attrs:
        if attribute["type"].native == "message_digest":
            return attribute["values"][0].native
    raise SigningError("the signature has no messageDigest attribute")


def _check_signature(signer: x509.Certificate, value: bytes, data: bytes, hash_type: hashes.HashAlgorithm) -> None:
    key = signer.public_key()
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(value, data, ec.ECDSA(hash_type))
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(value, data, padding.PKCS1v15(), hash_type)
        else:
            raise SigningError(f"the signer's key type {type(key).__name__} is not supported (EC or RSA)")
    except InvalidSignature:
        raise SigningError(f"the signature of '{signer.subject.rfc4514_string()}' does not verify: "
                           "the signature file was altered or made with another key") from None
