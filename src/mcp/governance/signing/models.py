"""Signed models: ``MODEL.mcp.sig``, a detached CMS signature over the model file's sha256.

The signed content is the file's sha256 as 64 lowercase hex digits (no newline), so a
signature of a many-gigabyte model is made and checked while streaming the file once, and
``openssl cms -verify -binary -content DIGEST_FILE`` checks it too (docs/compliance.md).
"""

from __future__ import annotations

from pathlib import Path

from cryptography import x509

from mcp.base.errors import ModelNotFoundError, ModelSignatureError
from mcp.governance.errors import SigningError
from mcp.governance.signing.cms import SignatureInfo, sign_detached, verify_detached
from mcp.governance.signing.keys import SigningIdentity, load_certificates
from mcp.modelfile.hashing import file_sha256

SIGNATURE_SUFFIX = ".sig"


def signature_path(model: Path) -> Path:
    return model.with_name(model.name + SIGNATURE_SUFFIX)


def signed_content(model: Path) -> bytes:
    """What a model signature covers: the file's sha256, 64 hex digits."""
    if not model.is_file():
        raise ModelNotFoundError(f"{model}: no such model file to sign or verify")
    return file_sha256(model).encode("ascii")


def sign_model(model: Path, identity: SigningIdentity, out: Path | None = None) -> Path:
    """Write the detached signature of ``model`` (default ``MODEL.mcp.sig``); return its path."""
    model = Path(model)
    destination = Path(out) if out else signature_path(model)
    destination.write_bytes(sign_detached(signed_content(model), identity))
    return destination


def verify_model(model: Path, trusted: list[x509.Certificate], signature: Path | None = None) -> SignatureInfo:
    """Check ``model`` against its signature and the trusted CAs; ``ModelSignatureError`` if not."""
    model = Path(model)
    signature = Path(signature) if signature else signature_path(model)
    if not signature.is_file():
        raise ModelSignatureError(f"{model} is not signed: {signature} does not exist; sign it with "
                                  "`mcp2026 sign`, or turn off runtime.require_signed_models")
    try:
        return verify_detached(signature.read_bytes(), signed_content(model), trusted)
    except SigningError as exc:
        raise ModelSignatureError(f"{model}: its signature {signature.name} is refused: {exc}") from None


def trusted_certificates(ca_file: Path | None) -> list[x509.Certificate]:
    """The CAs in ``ca_file``; a ``ModelSignatureError`` when none is configured or readable."""
    if ca_file is None:
        raise ModelSignatureError("signed models are required but no trusted CA is configured; set "
                                  "runtime.trusted_ca in mcp-config.yaml to the CA's PEM file")
    try:
        return load_certificates(Path(ca_file))
    except SigningError as exc:
        raise ModelSignatureError(f"the trusted CA file cannot be used: {exc}") from None
