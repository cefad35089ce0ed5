"""The TPM 2.0 provider: every measurement also extends a real PCR, and evidence carries a
TPM2_Quote over the verifier's nonce by an attestation key (AK).

The AK is a restricted ECDSA P-256 signing key, created as a primary key under the
endorsement (or owner) hierarchy: the same TPM and template give the same key after every
restart, so an operator can pin its public key. The PCR (``attestation.pcr``, default 23) is
reset when the provider starts: one attested server per TPM and PCR.
Needs ``tpm2-pytss`` (``pip install 'mcp2026[attestation]'``, built against libtss2-dev).
"""

from __future__ import annotations

import threading

from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.evidence import EvidenceContext
from mcp.governance.attestation.log import MeasurementEvent
from mcp.governance.attestation.tpm_quote import SIGNATURE_ALGORITHM

HIERARCHIES = ("endorsement", "owner")


def _tss():
    try:
        import tpm2_pytss
    except ImportError as exc:
        raise AttestationError(f"attestation.tpm needs tpm2-pytss ({exc}); pip install 'mcp2026[attestation]' "
                               "(apt-get install libtss2-dev first: it builds against it)") from None
    return tpm2_pytss


class TpmProvider:
    name = "tpm"

    def __init__(self, tcti: str, pcr: int, hierarchy: str = "endorsement") -> None:
        tss = _tss()
        self.tcti, self.pcr, self._tss = tcti, pcr, tss
        self._lock = threading.Lock()  # one ESAPI context: one command at a time
        try:
            self._esapi = tss.ESAPI(tss.TCTILdr.parse(tcti))
        except tss.TSS2_Exception as exc:
            raise AttestationError(f"attestation.tpm.tcti {tcti!r}: cannot reach the TPM ({exc}); check the "
                                   "TCTI (device:/dev/tpmrm0, swtpm:host=H,port=P) and that the TPM is up") from None
        self._pcr_handle = getattr(tss.ESYS_TR, f"PCR{pcr}")
        try:
            self._esapi.pcr_reset(self._pcr_handle)
        except tss.TSS2_Exception as exc:
            self.close()
            raise AttestationError(f"attestation.pcr {pcr}: the TPM refuses to reset it ({exc}); use a resettable "
                                   "application PCR (16 or 23)") from None
        self._ak, self.ak_public_pem = self._create_ak(hierarchy)

    def _create_ak(self, hierarchy: str):
        tss = self._tss
        attributes = (tss.TPMA_OBJECT.RESTRICTED | tss.TPMA_OBJECT.SIGN_ENCRYPT | tss.TPMA_OBJECT.FIXEDTPM
                      | tss.TPMA_OBJECT.FIXEDPARENT | tss.TPMA_OBJECT.SENSITIVEDATAORIGIN
                      | tss.TPMA_OBJECT.USERWITHAUTH)
        template = tss.TPM2B_PUBLIC.parse("ecc256:ecdsa-sha256:null", objectAttributes=attributes)
        parent = tss.ESYS_TR.ENDORSEMENT if hierarchy == "endorsement" else tss.ESYS_TR.OWNER
        try:
            handle, public, *_ = self._esapi.create_primary(tss.TPM2B_SENSITIVE_CREATE(), template, parent)
        except tss.TSS2_Exception as exc:
            raise AttestationError(f"cannot create the attestation key under the {hierarchy} hierarchy ({exc}); "
                                   "the hierarchy may have a password: use the other one") from None
        return handle, public.to_pem().decode()

    def extend(self, event: MeasurementEvent) -> None:
        """A ``MeasurementLog`` sink: the event's digest into the PCR's sha256 bank."""
        tss = self._tss
        values = tss.TPML_DIGEST_VALUES([tss.TPMT_HA(hashAlg=tss.TPM2_ALG.SHA256,
                                                    digest=tss.TPMU_HA(sha256=bytes.fromhex(event.digest)))])
        with self._lock:
            self._esapi.pcr_extend(self._pcr_handle, values)

    def report(self, context: EvidenceContext) -> dict:
        tss = self._tss
        selection = tss.TPML_PCR_SELECTION.parse(f"sha256:{self.pcr}")
        scheme = tss.TPMT_SIG_SCHEME(scheme=tss.TPM2_ALG.NULL)  # the AK's own: ECDSA SHA-256
        with self._lock:
            quoted, signature = self._esapi.quote(self._ak, selection, tss.TPM2B_DATA(context.nonce), scheme)
            _, _, digests = self._esapi.pcr_read(selection)
        return {"pcr": self.pcr, "quote": bytes(quoted).hex(), "signature": bytes(signature).hex(),
                "signature_algorithm": SIGNATURE_ALGORITHM, "ak_public": self.ak_public_pem,
                "pcr_values": {str(self.pcr): bytes(digests[0]).hex()}}

    def close(self) -> None:
        with self._lock:
            if self._esapi is not None:
                self._esapi.close()
                self._esapi = None
