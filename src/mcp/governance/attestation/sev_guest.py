"""Asking the AMD secure processor for an attestation report, from inside an SEV-SNP guest.

This is the only code that talks to ``/dev/sev-guest``; it cannot run on a machine without
SEV-SNP (the tests build reports to the documented layout instead, signed by test keys).
From ``linux/sev-guest.h``:

    struct snp_report_req { __u8 user_data[64]; __u32 vmpl; __u8 rsvd[28]; };          // 96 bytes
    struct snp_report_resp { __u8 data[4000]; };
    struct snp_guest_request_ioctl { __u8 msg_version; __u64 req_data; __u64 resp_data;
                                     __u64 exitinfo2; };                                   // 32 bytes
    #define SNP_GET_REPORT _IOWR('S', 0x0, struct snp_guest_request_ioctl)

The response data starts with ``struct snp_msg_report_resp { __u32 status; __u32 report_size;
__u8 reserved[24]; }`` followed by the report.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import struct

from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.evidence import EvidenceContext, snp_report_data
from mcp.governance.attestation.log import ZERO_PCR
from mcp.governance.attestation.snp_report import REPORT_SIZE, SnpReport

DEFAULT_DEVICE = "/dev/sev-guest"
_IOC_WRITE_READ = 3
SNP_GET_REPORT = (_IOC_WRITE_READ << 30) | (32 << 16) | (ord("S") << 8) | 0x0
_RESPONSE_BYTES = 4000
_RESPONSE_HEADER = 32


def get_report(report_data: bytes, vmpl: int = 0, device: str = DEFAULT_DEVICE) -> bytes:
    """The raw report with ``report_data`` (64 bytes) in it, from the guest device."""
    request = ctypes.create_string_buffer(report_data.ljust(64, b"\0") + struct.pack("<I", vmpl) + bytes(28))
    response = ctypes.create_string_buffer(_RESPONSE_BYTES)
    ioctl_arg = bytearray(struct.pack("<B7xQQQ", 1, ctypes.addressof(request), ctypes.addressof(response), 0))
    try:
        descriptor = os.open(device, os.O_RDWR)
    except OSError as exc:
        raise AttestationError(f"cannot open {device} ({exc}); SEV-SNP evidence needs an SNP guest with the "
                               "sev-guest driver, or remove attestation.sev_snp from the config") from None
    try:
        fcntl.ioctl(descriptor, SNP_GET_REPORT, ioctl_arg, True)
    except OSError as exc:
        firmware_error = struct.unpack_from("<Q", ioctl_arg, 24)[0]
        raise AttestationError(f"SNP_GET_REPORT on {device} failed ({exc}, firmware error {firmware_error:#x})") \
            from None
    finally:
        os.close(descriptor)
    status, size = struct.unpack_from("<II", response.raw, 0)
    if status != 0 or size < REPORT_SIZE:
        raise AttestationError(f"the secure processor answered status {status:#x}, report size {size}")
    return response.raw[_RESPONSE_HEADER:_RESPONSE_HEADER + REPORT_SIZE]


class SevSnpProvider:
    """Adds an SNP report binding the nonce, the instance key and the log to each evidence."""

    name = "sev_snp"

    def __init__(self, pcr: int, device: str = DEFAULT_DEVICE, vmpl: int = 0) -> None:
        if not os.path.exists(device):
            raise AttestationError(f"attestation.sev_snp: {device} does not exist; this is not an SEV-SNP guest "
                                   "(or the sev-guest driver is not loaded). Remove attestation.sev_snp on other "
                                   "machines")
        self.pcr, self.device, self.vmpl = pcr, device, vmpl

    def report(self, context: EvidenceContext) -> dict:
        data = snp_report_data(context.nonce, context.instance_public_key, context.pcrs.get(self.pcr, ZERO_PCR))
        raw = get_report(data, self.vmpl, self.device)
        return {"report": raw.hex(), "fields": SnpReport.parse(raw).summary()}

    def close(self) -> None:
        """Nothing is held between reports."""
