"""The instance key: an Ed25519 key that signs this installation's evidence.

Created 0600 on first use at ``attestation.key_file`` (default ``$MCP_HOME/attestation.key``,
beside the audit key); its public key travels in every evidence and an operator pins it in
the reference. It proves which installation answered, not what runs there: anyone who can read
the file can sign evidence (the TPM quote and the SNP report are what hardware vouches for).
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from mcp.base.paths import mcp_home
from mcp.governance.attestation.errors import AttestationError

ALGORITHM = "ed25519"


def default_key_file() -> Path:
    return mcp_home() / "attestation.key"


class InstanceKey:
    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private_key = private_key
        self.public_key = private_key.public_key()

    @classmethod
    def from_file(cls, path: str | Path | None = None) -> InstanceKey:
        """The key in ``path`` (PEM, PKCS#8), created 0600 when the file does not exist."""
        path = Path(path) if path else default_key_file()
        if not path.exists():
            _create(path)
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (OSError, ValueError) as exc:
            raise AttestationError(f"attestation key file {path} does not read as a PEM private key ({exc}); "
                                   "move it away and a new key is made on next start") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise AttestationError(f"attestation key file {path} holds a {type(key).__name__}, not an Ed25519 key")
        return cls(key)

    @property
    def public_b64(self) -> str:
        return public_key_b64(self.public_key)

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self._private_key.sign(message)).decode()


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption())
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another process made it first: use theirs
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)


def public_key_b64(key: Ed25519PublicKey) -> str:
    """The raw 32-byte public key, base64."""
    return base64.b64encode(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()


def key_id(public_b64: str) -> str:
    """sha256 hex of the raw public key: a short name for it in logs."""
    return hashlib.sha256(base64.b64decode(public_b64)).hexdigest()


def verify_signature(public_b64: str, signature_b64: str, message: bytes) -> bool:
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_b64, validate=True))
        key.verify(base64.b64decode(signature_b64, validate=True), message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True
