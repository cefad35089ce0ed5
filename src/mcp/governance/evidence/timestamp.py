"""RFC 3161 trusted timestamps: ask a timestamp authority (TSA) over HTTP, check its answer.

``request_timestamp`` POSTs a ``TimeStampReq`` (sha256 of the data, a nonce, the TSA's
certificate requested) to the TSA's URL and returns the DER ``TimeStampResp``.
``verify_timestamp`` checks with ``rfc3161-client`` that the response covers the data and is
signed by a TSA certificate issued by a trusted CA, and returns the time it attests.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from datetime import datetime, timezone

from cryptography import x509
from rfc3161_client import (
    HashAlgorithm,
    PKIStatus,
    TimestampRequestBuilder,
    VerificationError,
    VerifierBuilder,
    decode_timestamp_response,
)

from mcp.governance.errors import EvidenceError

QUERY_TYPE, REPLY_TYPE = "application/timestamp-query", "application/timestamp-reply"
TIMEOUT_S = 30.0


def request_timestamp(url: str, data: bytes) -> bytes:
    """The TSA's DER ``TimeStampResp`` over ``data``; an ``EvidenceError`` when it gives none."""
    query = (TimestampRequestBuilder().data(data).hash_algorithm(HashAlgorithm.SHA256).nonce(nonce=True)
             .cert_request(cert_request=True).build())
    request = urllib.request.Request(url, data=query.as_bytes(), method="POST",
                                     headers={"Content-Type": QUERY_TYPE, "Accept": REPLY_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            body = answer.read()
    except (urllib.error.URLError, OSError) as exc:
        raise EvidenceError(f"the timestamp authority {url} did not answer ({exc}); check --tsa-url, "
                            "or leave it out to make a bundle without a timestamp") from None
    try:
        response = decode_timestamp_response(body)
    except ValueError as exc:
        raise EvidenceError(f"the timestamp authority {url} answered something that is not a TimeStampResp "
                            f"({exc})") from None
    if response.status not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        raise EvidenceError(f"the timestamp authority {url} refused the request (status {response.status})")
    if response.tst_info.nonce != query.nonce:
        raise EvidenceError(f"the timestamp authority {url} answered with another request's nonce")
    return body


def verify_timestamp(reply: bytes, data: bytes, trusted: list[x509.Certificate]) -> datetime:
    """The time a ``TimeStampResp`` attests for ``data``; an ``EvidenceError`` says why not."""
    try:
        response = decode_timestamp_response(reply)
    except ValueError as exc:
        raise EvidenceError(f"the timestamp is not a DER TimeStampResp ({exc})") from None
    imprint = response.tst_info.message_imprint.message
    if imprint not in (hashlib.sha256(data).digest(), hashlib.sha512(data).digest()):
        raise EvidenceError("the timestamp does not cover the manifest's signature (its message imprint differs)")
    try:
        VerifierBuilder(roots=list(trusted)).build().verify_message(response, data)
    except VerificationError as exc:
        raise EvidenceError(f"the timestamp does not verify against the trusted CAs ({exc}); give the CA of the "
                            "timestamp authority with --tsa-ca") from None
    return response.tst_info.gen_time.astimezone(timezone.utc)
