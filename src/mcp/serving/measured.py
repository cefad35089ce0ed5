"""Measured launch for ``mcp2026 serve``: the attestor of the ``attestation:`` section, fed the
launch (code, config, policy) and every model the host loads (docs/security.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.config.runtime import RuntimeConfig
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost, ModelLoader, ModelVersion, default_loader

if TYPE_CHECKING:
    from mcp.governance.attestation.attestor import Attestor
    from mcp.governance.plane import GovernancePlane
    from mcp.serving.state import ServerState


def start_attestation(config: RuntimeConfig, config_source: str | None,
                      governance: GovernancePlane | None) -> Attestor | None:
    """None without an ``attestation:`` section; else the attestor, the launch (code, config,
    policy) measured. Call before the model host is made: its workers get the launch log."""
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
    return attestor


def model_loader(session: Session, attestor: Attestor | None) -> ModelLoader:
    """The host's loader; with attestation and worker isolation, each worker is handed the
    launch log in its start message and keeps it (``worker_report``)."""
    if attestor is None or session.config.serving.isolation != "worker":
        return default_loader(session)
    from mcp.serving.isolation.models import WorkerModels

    return WorkerModels(session, measurements=[event.to_dict() for event in attestor.log.events()])


def observe_models(attestor: Attestor | None, model_host: ModelHost) -> None:
    """Every model the host loads from now on extends the log. Call before the first load."""
    if attestor is not None:
        model_host.add_listeners(lambda loaded: _measure(attestor, loaded), lambda loaded: None)


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
    """In a worker, the digest the worker took of the file it opened (read-only, the same
    descriptor its engine loads from); in process, the file's digest now."""
    from mcp.serving.isolation.models import worker_report

    report = worker_report(loaded.model)
    if report is None:
        attestor.measure_model(loaded.key, loaded.model.path)
    else:
        attestor.measure_model_digest(loaded.key, report["model_sha256"])
