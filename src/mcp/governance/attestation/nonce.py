"""The verifier's nonce: 8 to 64 random bytes, written as hex or as base64url.

A text of an even number of hex digits is read as hex; anything else as base64url (``-``/``_``,
padding optional). 64 bytes is the most a TPM quote's extraData and an SNP report's report_data
hold.
"""

from __future__ import annotations

import base64
import binascii
import re

from mcp.governance.attestation.errors import NonceError

MIN_NONCE_BYTES = 8
MAX_NONCE_BYTES = 64
MAX_NONCE_CHARS = 2 * MAX_NONCE_BYTES
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]+={0,2}$")
HOW = (f"send {MIN_NONCE_BYTES} to {MAX_NONCE_BYTES} random bytes as hex or base64url, "
       "e.g. nonce=$(openssl rand -hex 32)")


def parse_nonce(text: str | None) -> bytes:
    """The nonce's bytes; a ``NonceError`` saying what is wrong otherwise."""
    if text is None or not text.strip():
        raise NonceError(f"the nonce is missing; {HOW}")
    if len(text) > MAX_NONCE_CHARS:
        raise NonceError(f"the nonce is {len(text)} characters, over the {MAX_NONCE_CHARS} allowed; {HOW}")
    if _HEX.match(text) and len(text) % 2 == 0:
        nonce = bytes.fromhex(text)
    elif _BASE64URL.match(text):
        try:
            nonce = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise NonceError(f"the nonce {text[:16]!r}... is not valid base64url; {HOW}") from None
    else:
        raise NonceError(f"the nonce {text[:16]!r}... is neither hex nor base64url; {HOW}")
    if not MIN_NONCE_BYTES <= len(nonce) <= MAX_NONCE_BYTES:
        raise NonceError(f"the nonce is {len(nonce)} bytes; {HOW}")
    return nonce
