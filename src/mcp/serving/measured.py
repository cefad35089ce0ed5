"""Measured launch for ``mcp2026 serve``: the attestor of the ``attestation:`` section, fed the
launch (code, config, policy) and every model the host loads (docs/attestation.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.runtime.config import RuntimeConfig
from mcp.serving.host import ModelHost, ModelVersion

if TYPE_CHECKING:
    from mcp.governance.attestation.attestor import Attestor
    from mcp.governance.plane import GovernancePlane
    from mcp.serving.http.app import ServerState


def start_attestation(config: RuntimeConfig, config_source: str | None, model_host: ModelHost,
                      governance: GovernancePlane | None) -> Attestor | None:
    """None without an ``attestation:`` section; else the attestor, launch measured and
    listening to the host's loads. Call before the first model loads."""
    if config.attestation is None:
        return None
    from mcp.governance.attestation.attestor import Attestor

    attestor = Attestor.from_config(config.attestation)
    try:
        attestor.measure_launch(config, config_source)
        observe_policy(attestor, config, governance)
    except BaseException:
        attestor.close()
        raise
    model_host.add_listeners(lambda loaded: _measure(attestor, loaded), lambda loaded: None)
    return attestor


def observe_policy(attestor: Attestor, config: RuntimeConfig, governance: GovernancePlane | None) -> None:
    """A new policy event when the serving bundle changed (it reloads on its own)."""
    if governance is None or config.serving.governance is None:
        return
    from mcp.governance.attestation.attestor import policy_name

    attestor.observe_policy(policy_name(config.serving.governance), governance.policy.version)


def swap_measured(state: ServerState, name: str, version: str) -> ModelVersion:
    """``host.swap``, and with attestation on a new event for the version made current, so that
    evidence reflects what is served now (HTTP and gRPC admin both swap through here)."""
    swapped = state.host.swap(name, version)
    if state.attestation is not None:
        state.attestation.measure_activation(swapped.key)
    return swapped


def _measure(attestor: Attestor, loaded: ModelVersion) -> None:
    attestor.measure_model(loaded.key, loaded.model.path)
