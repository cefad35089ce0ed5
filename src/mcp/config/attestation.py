"""The ``attestation:`` section of ``mcp-config.yaml``: measured launch and remote attestation.

Present (even as ``attestation: {}``), the server keeps a measurement log and answers
``GET /attestation``; ``tpm`` and ``sev_snp`` add hardware reports (docs/security.md).
Schema (pydantic, strict, at the edge) and the frozen ``AttestationConfig`` used inside.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pydantic
from mcp.base.sections import StrictSection


class TpmSection(StrictSection):
    tcti: str = pydantic.Field("device:/dev/tpmrm0", min_length=1)  # or swtpm:host=127.0.0.1,port=2321
    hierarchy: Literal["endorsement", "owner"] = "endorsement"  # where the attestation key is made


class SevSnpSection(StrictSection):
    device: str = "/dev/sev-guest"
    vmpl: int = pydantic.Field(0, ge=0, le=3)


class AttestationSection(StrictSection):
    key_file: str | None = None  # the instance key; None: $MCP_HOME/attestation.key
    pcr: int = pydantic.Field(23, ge=0, le=23)  # the PCR the log extends (a resettable one on a real TPM)
    tpm: TpmSection | None = None
    sev_snp: SevSnpSection | None = None


@dataclass(frozen=True)
class TpmConfig:
    tcti: str
    hierarchy: str = "endorsement"


@dataclass(frozen=True)
class SevSnpConfig:
    device: str = "/dev/sev-guest"
    vmpl: int = 0


@dataclass(frozen=True)
class AttestationConfig:
    key_file: str | None = None
    pcr: int = 23
    tpm: TpmConfig | None = None
    sev_snp: SevSnpConfig | None = None


def resolve_attestation(section: AttestationSection | None, base_dir: Path) -> AttestationConfig | None:
    """The frozen section (None when absent); a relative key_file resolves against the config's folder."""
    if section is None:
        return None
    key_file = str((base_dir / section.key_file).resolve()) if section.key_file else None
    tpm = TpmConfig(section.tpm.tcti, section.tpm.hierarchy) if section.tpm else None
    sev_snp = SevSnpConfig(section.sev_snp.device, section.sev_snp.vmpl) if section.sev_snp else None
    return AttestationConfig(key_file, section.pcr, tpm, sev_snp)
