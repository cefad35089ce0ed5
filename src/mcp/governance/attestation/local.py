"""Evidence measured in this process, as a server with the same config would measure it."""

from __future__ import annotations

from mcp.config.attestation import AttestationConfig
from mcp.config.runtime import RuntimeConfig
from mcp.governance.attestation.attestor import Attestor, policy_name


def local_evidence(config: RuntimeConfig, config_source: str | None, nonce: str, with_tpm: bool = False) -> dict:
    """Code, config, policy bundle (with ``serving.governance``) and the files of
    ``serving.models``, signed with this installation's instance key."""
    from mcp.config.model_path import resolve_model_path

    attestor = Attestor.from_config(config.attestation or AttestationConfig(), with_tpm=with_tpm)
    try:
        attestor.measure_launch(config, config_source)
        governance = config.serving.governance
        if governance is not None:
            attestor.observe_policy(policy_name(governance), _policy_version(governance))
        serving = {}
        for spec in config.serving.models:
            key = f"{spec.name}:{spec.version}"
            attestor.measure_model(key, resolve_model_path(config, spec.source))
            serving[spec.name] = key
        return attestor.evidence(nonce, serving)
    finally:
        attestor.close()


def _policy_version(governance) -> str:
    """What the server's policy engine reports as its version."""
    if governance.opa_url:
        return f"opa:{governance.opa_url.rstrip('/')}"
    from mcp.governance.policy.bundle import SHIPPED, PolicySource

    return PolicySource.read(governance.policy_bundle or SHIPPED).version
