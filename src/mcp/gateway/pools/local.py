"""Local pool members: models loaded in the gateway's own process.

A local member is ``mcp2026 serve``'s application (a ``ModelHost`` on the gateway's
``Session``) called in process through httpx's ASGI transport, so it is picked, retried and
broken like any remote member. That transport hands over a response whole: a stream from a
local member reaches the client in one piece at its end. For token-by-token streams put the
models behind ``mcp2026 serve`` and make it a remote member.
"""

from __future__ import annotations

import logging

import httpx

from mcp.config.runtime import RuntimeConfig
from mcp.gateway.pools.member import Member
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost
from mcp.serving.http.app import create_app
from mcp.serving.state import ServerState
from mcp.serving.tenants import TenantDirectory

log = logging.getLogger(__name__)


class LocalMembers:
    """Loads every local member's models on one session; ``close()`` unloads them."""

    def __init__(self, config: RuntimeConfig | None = None) -> None:
        self.config = config or RuntimeConfig()
        self.session: Session | None = None
        self.hosts: list[ModelHost] = []

    def attach(self, member: Member) -> None:
        """Load the member's models and give it an in-process client."""
        if self.session is None:
            self.session = Session(self.config)
        host = ModelHost(self.session, member.spec.local_models[0].name)
        self.hosts.append(host)
        for spec in member.spec.local_models:
            loaded = host.load(spec)
            log.info("local member %s: model %s ready in %.3f s", member.name, loaded.key, loaded.load_to_ready_s)
        app = create_app(ServerState(self.config, host, TenantDirectory(())))
        member.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), timeout=None)

    def close(self) -> None:
        for host in self.hosts:
            host.close()
        if self.session is not None:
            self.session.close()
