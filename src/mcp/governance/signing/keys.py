"""Signing keys: an evaluation CA made here, or the operator's key and certificate files.

``mcp2026 keys init`` writes, in ``$MCP_HOME/keys`` unless told otherwise, a self-signed CA
(``ca.pem``, ``ca.key``) and a signing key and certificate it issued (``signing.key``,
``signing.pem``). Private keys are created 0600. That CA is for evaluation: in production the
operator's PKI issues the certificate and ``signing:`` in mcp-config.yaml names the files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mcp.base.paths import mcp_home
from mcp.governance.errors import SigningError

CA_CERT, CA_KEY = "ca.pem", "ca.key"
SIGNING_CERT, SIGNING_KEY = "signing.pem", "signing.key"
PrivateKey = ec.EllipticCurvePrivateKey
PURPOSES = ("signing", "ca", "timestamping")


@dataclass(frozen=True)
class SigningIdentity:
    """A private key, its certificate, and the certificates between it and a root."""

    key: PrivateKey
    certificate: x509.Certificate
    chain: tuple[x509.Certificate, ...] = ()


@dataclass(frozen=True)
class KeyFiles:
    """Where ``init_keys`` wrote the evaluation CA and signing identity."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / CA_CERT

    @property
    def signing_key(self) -> Path:
        return self.directory / SIGNING_KEY

    @property
    def signing_cert(self) -> Path:
        return self.directory / SIGNING_CERT


def default_keys_dir() -> Path:
    return mcp_home() / "keys"


def init_keys(directory: Path | None = None, days: int = 365, force: bool = False,
              not_before: datetime | None = None) -> KeyFiles:
    """Create an evaluation CA and a signing key and certificate it issued, in ``directory``."""
    files = KeyFiles(Path(directory) if directory else default_keys_dir())
    existing = [p for p in (files.ca_cert, files.signing_cert) if p.exists()]
    if existing and not force:
        raise SigningError(f"{existing[0]} already exists; keep using it, pass --force to replace "
                           "the keys, or choose another --dir")
    files.directory.mkdir(parents=True, exist_ok=True)
    start = not_before or datetime.now(timezone.utc) - timedelta(minutes=5)
    ca_key, signing_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("MCP 2026 evaluation CA")
    ca_cert = _certificate(ca_name, ca_key.public_key(), ca_name, ca_key, start, days, "ca")
    signing_cert = _certificate(_name("MCP 2026 model signing"), signing_key.public_key(), ca_name, ca_key,
                                start, days, "signing")
    _write_private_key(files.directory / CA_KEY, ca_key)
    _write_private_key(files.signing_key, signing_key)
    files.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.signing_cert.write_bytes(signing_cert.public_bytes(serialization.Encoding.PEM))
    return files


def issue_certificate(subject: str, issuer: SigningIdentity, days: int = 365, purpose: str = "signing",
                      not_before: datetime | None = None) -> SigningIdentity:
    """A new key and a certificate for it signed by ``issuer``; ``purpose`` is "signing",
    "ca" (an intermediate) or "timestamping" (a TSA: critical extendedKeyUsage timeStamping)."""
    if purpose not in PURPOSES:
        raise SigningError(f"certificate purpose {purpose!r} is not one of {', '.join(PURPOSES)}")
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or datetime.now(timezone.utc) - timedelta(minutes=5)
    cert = _certificate(_name(subject), key.public_key(), issuer.certificate.subject, issuer.key, start, days,
                        purpose)
    return SigningIdentity(key, cert, (issuer.certificate, *issuer.chain))


def read_identity(files: KeyFiles) -> SigningIdentity:
    """The evaluation CA itself as an identity (to issue more certificates from it)."""
    return load_identity(files.directory / CA_KEY, files.ca_cert)


def load_identity(key_file: Path, cert_file: Path, chain_file: Path | None = None) -> SigningIdentity:
    """The signing identity in PEM files; ``chain_file`` holds intermediates, if any."""
    key = load_private_key(Path(key_file))
    certificate = load_certificates(Path(cert_file))[0]
    if certificate.public_key().public_numbers() != key.public_key().public_numbers():
        raise SigningError(f"the certificate {cert_file} is not for the key {key_file}; give the matching pair")
    chain = tuple(load_certificates(Path(chain_file))) if chain_file else ()
    return SigningIdentity(key, certificate, chain)


def default_identity() -> SigningIdentity:
    files = KeyFiles(default_keys_dir())
    if not files.signing_key.exists():
        raise SigningError(f"no signing key in {files.directory}; run `mcp2026 keys init` for an evaluation "
                           "key, or give --key and --cert")
    return load_identity(files.signing_key, files.signing_cert)


def load_private_key(path: Path) -> PrivateKey:
    try:
        key = serialization.load_pem_private_key(_read(path), password=None)
    except (ValueError, TypeError) as exc:
        raise SigningError(f"{path} is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise SigningError(f"{path} holds a {type(key).__name__}; MCP 2026 signs with EC (P-256) keys")
    return key


def load_certificates(path: Path) -> list[x509.Certificate]:
    """Every certificate in a PEM file, in order; at least one."""
    try:
        certificates = x509.load_pem_x509_certificates(_read(path))
    except ValueError as exc:
        raise SigningError(f"{path} holds no PEM certificate ({exc})") from None
    return certificates


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SigningError(f"cannot read {path}: {exc.strerror}; check the path") from None


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "MCP 2026"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: x509.Name, public_key, issuer: x509.Name, issuer_key: PrivateKey, start: datetime,
                 days: int, purpose: str) -> x509.Certificate:
    is_ca = purpose == "ca"
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
        .serial_number(x509.random_serial_number()).not_valid_before(start)
        .not_valid_after(start + timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    if is_ca:  # digital_signature, content_commitment, key_encipherment, data_encipherment, key_agreement,
        # key_cert_sign, crl_sign, encipher_only, decipher_only
        usage = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
    else:
        usage = x509.KeyUsage(True, True, False, False, False, False, False, False, False)
        timestamping = purpose == "timestamping"
        extended = ExtendedKeyUsageOID.TIME_STAMPING if timestamping else ExtendedKeyUsageOID.CODE_SIGNING
        builder = builder.add_extension(x509.ExtendedKeyUsage([extended]), critical=timestamping)
    return builder.add_extension(usage, critical=True).sign(issuer_key, hashes.SHA256())


def _write_private_key(path: Path, key: PrivateKey) -> None:
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
