"""Reading and checking a TPM 2.0 quote with nothing but ``cryptography`` (no TPM needed).

A quote is a marshalled TPMS_ATTEST (TPM 2.0 Part 2, 10.12.12), big-endian:

    magic u32 (TPM_GENERATED 0xff544347)  type u16 (TPM_ST_ATTEST_QUOTE 0x8018)
    qualifiedSigner TPM2B_NAME  extraData TPM2B_DATA (the verifier's nonce)
    clockInfo {clock u64, resetCount u32, restartCount u32, safe u8}  firmwareVersion u64
    quote {pcrSelect TPML_PCR_SELECTION, pcrDigest TPM2B_DIGEST}

``pcrDigest`` is the hash of the selected PCRs' values concatenated in selection order; the
attestation key signs the whole TPMS_ATTEST (ECDSA P-256 over its SHA-256 here).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp.governance.attestation.errors import AttestationError

TPM_GENERATED = 0xFF544347
TPM_ST_ATTEST_QUOTE = 0x8018
TPM_ALG_SHA256 = 0x000B
SIGNATURE_ALGORITHM = "ecdsa-p256-sha256"


@dataclass(frozen=True)
class Quote:
    magic: int
    type: int
    qualified_signer: bytes
    extra_data: bytes
    clock: int
    reset_count: int
    restart_count: int
    firmware_version: int
    pcr_selection: tuple[tuple[int, tuple[int, ...]], ...]  # (hash algorithm, PCR indexes)
    pcr_digest: bytes

    @classmethod
    def parse(cls, attest: bytes) -> Quote:
        try:
            return cls._parse(_Reader(attest))
        except (struct.error, IndexError):
            raise AttestationError(f"the TPM quote ({len(attest)} bytes) is truncated; it is not a TPMS_ATTEST") \
                from None

    @classmethod
    def _parse(cls, reader: _Reader) -> Quote:
        magic, kind = reader.unpack(">IH")
        signer, extra = reader.sized(), reader.sized()
        clock, reset_count, restart_count, _safe, firmware = reader.unpack(">QIIBQ")
        (count,) = reader.unpack(">I")
        selection = []
        for _ in range(count):
            algorithm, size = reader.unpack(">HB")
            bits = reader.take(size)
            selection.append((algorithm, tuple(i for i in range(8 * size) if bits[i // 8] >> (i % 8) & 1)))
        return cls(magic, kind, signer, extra, clock, reset_count, restart_count, firmware, tuple(selection),
                   reader.sized())


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def unpack(self, layout: str) -> tuple:
        values = struct.unpack_from(layout, self.data, self.offset)
        self.offset += struct.calcsize(layout)
        return values

    def take(self, size: int) -> bytes:
        if self.offset + size > len(self.data):
            raise IndexError(size)
        chunk = self.data[self.offset:self.offset + size]
        self.offset += size
        return chunk

    def sized(self) -> bytes:
        (size,) = self.unpack(">H")
        return self.take(size)


def check_quote(tpm: dict, nonce: bytes, expected_pcrs: dict[int, str]) -> list[str]:
    """Problems with the evidence's ``tpm`` section: its signature by the AK, the nonce in
    extraData, the quoted PCR digest against the reported values and those against the log."""
    try:
        attest, signature = bytes.fromhex(tpm["quote"]), bytes.fromhex(tpm["signature"])
        ak = serialization.load_pem_public_key(tpm["ak_public"].encode())
        pcr_values = {int(k): v for k, v in tpm["pcr_values"].items()}
    except (KeyError, ValueError, TypeError, AttributeError, UnsupportedAlgorithm) as exc:
        return [f"TPM: the tpm section is malformed ({exc!r}); it needs quote, signature, ak_public, pcr_values"]
    problems = _signature_problems(ak, attest, signature, tpm.get("signature_algorithm"))
    try:
        quote = Quote.parse(attest)
    except AttestationError as exc:
        return [*problems, f"TPM: {exc}"]
    if quote.magic != TPM_GENERATED or quote.type != TPM_ST_ATTEST_QUOTE:
        problems.append(f"TPM: not a quote made by a TPM (magic {quote.magic:#x}, type {quote.type:#x})")
    if quote.extra_data != nonce:
        problems.append(f"TPM: the quote's extraData is {quote.extra_data.hex()}, not the nonce {nonce.hex()}")
    return problems + _pcr_problems(quote, pcr_values, expected_pcrs)


def _signature_problems(ak, attest: bytes, signature: bytes, algorithm: str | None) -> list[str]:
    if algorithm != SIGNATURE_ALGORITHM or not isinstance(ak, ec.EllipticCurvePublicKey):
        return [f"TPM: signature algorithm {algorithm!r} with a {type(ak).__name__} AK; "
                f"expected {SIGNATURE_ALGORITHM}"]
    try:
        ak.verify(signature, attest, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return ["TPM: the quote's signature does not verify with the attestation key (ak_public)"]
    return []


def _pcr_problems(quote: Quote, pcr_values: dict[int, str], expected_pcrs: dict[int, str]) -> list[str]:
    selected = [i for algorithm, indexes in quote.pcr_selection if algorithm == TPM_ALG_SHA256 for i in indexes]
    if sorted(selected) != sorted(pcr_values):
        return [f"TPM: the quote covers sha256 PCRs {selected}, the evidence reports {sorted(pcr_values)}"]
    problems = []
    concatenated = b"".join(bytes.fromhex(pcr_values[i]) for i in selected)
    if hashlib.sha256(concatenated).digest() != quote.pcr_digest:
        problems.append("TPM: the quoted PCR digest does not match the reported PCR values")
    for index in selected:
        replayed = expected_pcrs.get(index)
        if replayed != pcr_values[index]:
            problems.append(f"TPM: PCR {index} is {pcr_values[index]} in the TPM, the replayed log gives {replayed}")
    return problems
