"""A certificate path from a signer up to a trusted CA, checked at a given time.

Each step must be signed by the next certificate, which must be a CA (basicConstraints
CA:true); every certificate on the path must be valid at ``at`` (the trusted timestamp's time
when there is one, else now). The path ends at a certificate of the trusted set.
"""

from __future__ import annotations

from datetime import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from mcp.governance.errors import SigningError

MAX_PATH_LENGTH = 8


def verify_chain(signer: x509.Certificate, intermediates: list[x509.Certificate],
                 trusted: list[x509.Certificate], at: datetime) -> list[x509.Certificate]:
    """The path ``[signer, ..., trusted root]``; a ``SigningError`` names the broken link."""
    path = [signer]
    while len(path) <= MAX_PATH_LENGTH:
        current = path[-1]
        root = _issuer_in(current, trusted)
        if root is not None:
            path.append(root)
            _check_validity(path, at)
            return path
        issuer = _issuer_in(current, [c for c in intermediates if c not in path])
        if issuer is None:
            raise SigningError(
                f"certificate '{_subject(current)}' was not issued by a trusted CA (its issuer is "
                f"'{current.issuer.rfc4514_string()}'); give the CA that issued it, or the missing intermediate")
        path.append(issuer)
    raise SigningError(f"the certificate path of '{_subject(signer)}' is longer than {MAX_PATH_LENGTH}")


def _issuer_in(child: x509.Certificate, candidates: list[x509.Certificate]) -> x509.Certificate | None:
    """The candidate that signed ``child`` and may issue certificates, if any."""
    for candidate in candidates:
        if candidate.subject != child.issuer or not _is_ca(candidate):
            continue
        try:
            child.verify_directly_issued_by(candidate)
        except (InvalidSignature, ValueError, TypeError):
            continue
        return candidate
    return None


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        return certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _check_validity(path: list[x509.Certificate], at: datetime) -> None:
    for certificate in path:
        if at < certificate.not_valid_before_utc:
            raise SigningError(f"certificate '{_subject(certificate)}' is not valid yet at {at.isoformat()} "
                               f"(valid from {certificate.not_valid_before_utc.isoformat()})")
        if at > certificate.not_valid_after_utc:
            raise SigningError(f"certificate '{_subject(certificate)}' expired on "
                               f"{certificate.not_valid_after_utc.isoformat()} (checked at {at.isoformat()}); "
                               "sign again with a valid certificate")


def _subject(certificate: x509.Certificate) -> str:
    return certificate.subject.rfc4514_string()
