"""The audit key file, pseudonyms, and the per-subject keys that encrypt captures.

One 32-byte secret in a file (``serving.governance.audit.key_file``, default
``$MCP_HOME/audit.key``, created 0600 on first use) keys two things: the pseudonym of a data
subject (HMAC-SHA256, so records name no user and the same subject always gets the same
pseudonym) and the wrapping of the subject keys stored in the database (AES-GCM), so a
database dump alone reads no capture. Erasing a subject deletes its key: its captures can
never be read again (crypto-shredding).

A subject is a tenant's user: the pseudonym covers both, so two tenants' "alice" are two
subjects with two keys. Records written before audit0003 carry the legacy pseudonym, an HMAC
of the user id alone (``legacy_pseudonym``); erase and export find those by it and the tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mcp.base.paths import mcp_home
from mcp.governance.errors import AuditError

KEY_BYTES = 32


@dataclass(frozen=True)
class Subject:
    """Whom ``audit erase``/``export`` act on: the pseudonym records carry, and for a tenant's
    user also the legacy pseudonym (HMAC of the user alone) that records written before
    audit0003 carry, which counts only with the tenant's own records."""

    pseudonym: str
    tenant: str | None = None
    legacy: str | None = None


def default_key_file() -> Path:
    return mcp_home() / "audit.key"


class AuditKeys:
    def __init__(self, secret: bytes) -> None:
        if len(secret) != KEY_BYTES:
            raise AuditError(f"the audit key must be {KEY_BYTES} bytes, it is {len(secret)}")
        self._pseudonym_key = hmac.new(secret, b"mcp2026 audit pseudonym", hashlib.sha256).digest()
        self._wrap = AESGCM(hmac.new(secret, b"mcp2026 audit key wrap", hashlib.sha256).digest())

    @classmethod
    def from_file(cls, path: str | Path | None = None, create: bool = True) -> AuditKeys:
        path = Path(path) if path else default_key_file()
        if not path.exists():
            if not create:
                raise AuditError(f"audit key file {path} does not exist; give the server's --key-file")
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(os.urandom(KEY_BYTES))
        return cls(path.read_bytes())

    def pseudonym(self, tenant: str, user_id: str) -> str:
        """The subject id records carry for ``user_id`` of ``tenant``: 32 hex digits, stable under
        one key file. The input is JSON ``[tenant, user]``: no pair of names can collide with
        another, and a lone surrogate is escaped rather than an encoding error."""
        subject = json.dumps([tenant, user_id], ensure_ascii=True, separators=(",", ":")).encode()
        return hmac.new(self._pseudonym_key, subject, hashlib.sha256).hexdigest()[:32]

    def subject(self, tenant: str, user_id: str) -> Subject:
        """The data subject ``user_id`` of ``tenant``, with the legacy pseudonym of its older records."""
        return Subject(self.pseudonym(tenant, user_id), tenant, self.legacy_pseudonym(user_id))

    def legacy_pseudonym(self, user_id: str) -> str:
        """The subject id of records written before audit0003: of the user id alone (every tenant's)."""
        return hmac.new(self._pseudonym_key, user_id.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]

    def new_wrapped_key(self, subject: str) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._wrap.encrypt(nonce, AESGCM.generate_key(bit_length=256), subject.encode())

    def unwrap(self, subject: str, wrapped: bytes) -> AESGCM:
        try:
            return AESGCM(self._wrap.decrypt(wrapped[:12], wrapped[12:], subject.encode()))
        except InvalidTag:
            raise AuditError(f"the key of subject {subject} does not open with this key file; "
                             "use the key file of the server that wrote it") from None


def seal(key: AESGCM, record_hash: str, prompt: str, output: str | None) -> tuple[bytes, bytes]:
    """(nonce, ciphertext) of a capture, bound to its record by the record's hash."""
    nonce = os.urandom(12)
    body = json.dumps({"prompt": prompt, "output": output}).encode()
    return nonce, key.encrypt(nonce, body, record_hash.encode())


def open_sealed(key: AESGCM, record_hash: str, nonce: bytes, ciphertext: bytes) -> dict:
    try:
        return json.loads(key.decrypt(nonce, ciphertext, record_hash.encode()))
    except InvalidTag:
        raise AuditError(f"the capture of record {record_hash[:12]} does not decrypt: it was altered or moved") \
            from None
