"""``Attestor``: a process's measurement log, its instance key and hardware providers.

    attestor = Attestor.from_config(config.attestation)
    attestor.measure_launch(config, config_source)       # code, config (policy: observe_policy)
    attestor.measure_model("smollm2:1", path)            # at every load
    attestor.measure_activation("smollm2:1")             # a swap makes a loaded version current
    evidence = attestor.evidence(nonce, serving={"smollm2": "smollm2:1"})

Nothing here knows of HTTP or of the model host: the serving layer calls these.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

from mcp.config.attestation import AttestationConfig
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import GovernanceConfig
from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.evidence import EvidenceProvider, make_evidence
from mcp.governance.attestation.keys import InstanceKey, key_id
from mcp.governance.attestation.log import MeasurementEvent, MeasurementLog
from mcp.governance.attestation.measure import code_measurement, config_measurement, model_measurement

log = logging.getLogger(__name__)
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def policy_name(governance: GovernanceConfig) -> str:
    """How a policy event names the policies: the OPA server, the bundle folder, or "shipped"."""
    return governance.opa_url or governance.policy_bundle or "shipped"


class Attestor:
    def __init__(self, measurements: MeasurementLog, key: InstanceKey,
                 providers: tuple[EvidenceProvider, ...] = ()) -> None:
        self.log, self.key, self.providers = measurements, key, providers

    @classmethod
    def from_config(cls, config: AttestationConfig, with_tpm: bool = True) -> Attestor:
        """The log, the key (created on first use) and the configured providers; a TPM provider
        extends its PCR with every event from here on."""
        measurements = MeasurementLog(config.pcr)
        key = InstanceKey.from_file(config.key_file)
        providers: list[EvidenceProvider] = []
        if config.tpm is not None and with_tpm:
            from mcp.governance.attestation.tpm import TpmProvider

            tpm = TpmProvider(config.tpm.tcti, config.pcr, config.tpm.hierarchy)
            measurements.add_sink(tpm.extend)
            providers.append(tpm)
        if config.sev_snp is not None:
            from mcp.governance.attestation.sev_guest import SevSnpProvider

            providers.append(SevSnpProvider(config.pcr, config.sev_snp.device, config.sev_snp.vmpl))
        log.info("attestation: instance key %s, PCR %d, providers: %s", key_id(key.public_b64)[:16], config.pcr,
                 ", ".join(p.name for p in providers) or "none (software log only)")
        return cls(measurements, key, tuple(providers))

    def measure_launch(self, config: RuntimeConfig, config_source: str | None) -> None:
        """The first events: the runtime's code, then its config."""
        self.log.extend("code", *code_measurement())
        self.log.extend("config", *config_measurement(config, config_source))

    def observe_policy(self, name: str, version: str) -> MeasurementEvent | None:
        """A ``policy`` event when the bundle's version differs from the last one measured (a
        reload); its digest is the version (the sha256 of the bundle's files) or, for a version
        that is not a sha256 (an OPA server's), the sha256 of it."""
        digest = version if _SHA256_HEX.match(version) else hashlib.sha256(version.encode()).hexdigest()
        latest = self.log.latest("policy", name)
        if latest is not None and latest.digest == digest:
            return None
        return self.log.extend("policy", name, digest)

    def measure_model(self, key: str, path: Path) -> MeasurementEvent:
        return self.log.extend("model", *model_measurement(key, path))

    def measure_model_digest(self, key: str, sha256_hex: str) -> MeasurementEvent:
        """A model whose file was hashed elsewhere: by the worker that opened it."""
        return self.log.extend("model", key, sha256_hex)

    def measure_activation(self, key: str) -> MeasurementEvent:
        """A swap: the version becomes current again, measured with the digest it was loaded with."""
        loaded = self.log.latest("model", key)
        if loaded is None:
            raise AttestationError(f"model {key} was never measured; it must be loaded before it is swapped in")
        return self.log.extend("model", key, loaded.digest)

    def evidence(self, nonce: str | None, serving: dict[str, str] | None = None) -> dict:
        return make_evidence(self.log, self.key, nonce, self.providers, serving)

    def close(self) -> None:
        for provider in self.providers:
            provider.close()
