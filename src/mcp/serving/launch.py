"""``mcp2026 serve``: load the configured models, then serve HTTP with uvicorn (and, with
``serving.grpc.enabled``, the gRPC API on the same event loop and state) until SIGTERM.

SIGTERM (or Ctrl-C) stops accepting connections, turns ``/ready`` to 503 and gRPC health to
NOT_SERVING, lets in-flight requests of both APIs finish for up to
``serving.timeouts.shutdown_drain_s`` seconds, then unloads.
With no tenant keys configured the server runs open and binds 127.0.0.1 whatever the host.
"""

from __future__ import annotations

import logging
import signal
from dataclasses import replace
from typing import TYPE_CHECKING

import uvicorn

from mcp.base.errors import ConfigError
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig
from mcp.runtime.session import Session
from mcp.serving.grpc.server import GrpcServer
from mcp.serving.host import ModelHost
from mcp.serving.http.app import create_app
from mcp.serving.http.protocol import with_header_deadline
from mcp.serving.measured import model_loader, observe_models, start_attestation
from mcp.serving.state import ServerState
from mcp.serving.tenants import TenantDirectory

if TYPE_CHECKING:
    from mcp.governance.attestation.attestor import Attestor
    from mcp.governance.plane import GovernancePlane

logger = logging.getLogger("mcp.serving")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(config: RuntimeConfig, host: str | None = None, port: int | None = None,
          extra_models: tuple[ServedModel, ...] = (), config_source: str | None = None) -> int:
    """Run the server in this process until it is told to stop; returns the exit status."""
    _setup_logging()
    serving = _bind_address(config.serving, host, port)
    models = (*serving.models, *extra_models)
    if not models:
        raise ConfigError("no model to serve: add serving.models to the config or pass --model")
    config = replace(config, serving=replace(serving, models=models))
    governance = _governance(serving)
    attestation = None
    try:
        attestation = start_attestation(config, config_source, governance)
        with Session(config) as session:
            _run(session, config, attestation, governance)
    finally:
        if attestation is not None:
            attestation.close()
        if governance is not None:
            governance.close()  # the queued audit records written, the spans exported
    return 0


def _run(session: Session, config: RuntimeConfig, attestation: Attestor | None,
         governance: GovernancePlane | None) -> None:
    """Load the served models, then serve HTTP (and gRPC) until told to stop."""
    serving = config.serving
    model_host = ModelHost(session, serving.default_model or serving.models[0].name, model_loader(session, attestation))
    state = ServerState(config, model_host, TenantDirectory(serving.tenants), governance=governance,
                        attestation=attestation)
    try:
        observe_models(attestation, model_host)
        for spec in serving.models:
            loaded = model_host.load(spec)
            logger.info("model %s ready in %.3f s (%s)", loaded.key, loaded.load_to_ready_s, spec.source)
        grpc_server = None if serving.grpc_port is None else GrpcServer(state, serving.host, serving.grpc_port)
        server = _DrainingServer(state, uvicorn.Config(
            create_app(state), host=serving.host, port=serving.port, log_level="info",
            timeout_graceful_shutdown=serving.shutdown_drain_s, access_log=False,
            http=with_header_deadline(serving.header_timeout_s)), grpc_server)
        _quiet_after_drain()
        server.run()
    finally:
        model_host.close()


def _governance(serving: ServingConfig):
    """The governance plane of ``serving.governance``, or None when the section is absent."""
    if serving.governance is None:
        return None
    from mcp.governance.plane import GovernancePlane

    return GovernancePlane.from_config(serving.governance, serving.service_name)


def _bind_address(serving: ServingConfig, host: str | None, port: int | None) -> ServingConfig:
    serving = replace(serving, host=host or serving.host, port=serving.port if port is None else port)
    if serving.tenants:
        return serving
    if serving.host not in LOOPBACK:
        logger.warning("no API keys are configured (serving.tenants): binding 127.0.0.1 instead of %s",
                       serving.host)
        serving = replace(serving, host="127.0.0.1")
    logger.warning("running OPEN: no API keys are configured, every caller is an admin; "
                   "add serving.tenants to require keys")
    return serving


class _DrainingServer(uvicorn.Server):
    """uvicorn's server, telling the app (and the gRPC server) it drains as soon as a signal arrives."""

    def __init__(self, state: ServerState, config: uvicorn.Config, grpc_server: GrpcServer | None) -> None:
        super().__init__(config)
        self._state = state
        self._grpc = grpc_server

    async def serve(self, sockets=None) -> None:
        """The gRPC server runs for as long as uvicorn does; both drain at once (handle_exit)."""
        if self._grpc is not None:
            port = await self._grpc.start()
            logger.info("gRPC API (mcp.v1.InferenceService, health, reflection) on %s:%d",
                        self._state.config.serving.host, port)
        try:
            await super().serve(sockets)
        finally:
            if self._grpc is not None:
                await self._grpc.stop()

    def handle_exit(self, sig, frame) -> None:
        if not self._state.draining:
            logger.info("signal %s: draining in-flight requests (up to %.0f s), then stopping", sig,
                        self._state.config.serving.shutdown_drain_s)
        self._state.draining = True
        if self._grpc is not None:
            self._grpc.begin_drain()
        super().handle_exit(sig, frame)


def _quiet_after_drain() -> None:
    """uvicorn raises the signal it caught again once it has drained, with the handlers it found
    installed: these keep that second delivery from killing the process before the models unload."""
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: None)


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
