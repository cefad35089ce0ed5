"""Real upstreams and gateways on loopback: four ``mcp2026 serve`` processes with the tiny model
(``slow`` delayed by the ``MCP_FAULT_DELAY_MS`` knob, ``doomed`` there to be killed), and
``start_gateway(config, rules)`` for gateway processes in front of them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from gateway_process import GatewayProcess, free_port  # noqa: E402

SLOW_DELAY_MS = 1500


@pytest.fixture(scope="session")
def upstreams(start_server, tiny_mcp) -> dict:
    """name -> ServerProcess: stable serves tiny:1, canary tiny:2, slow tiny:3 (1.5 s late), doomed tiny:1."""
    def serve(version: str, env: dict | None = None):
        return start_server({"serving": {"models": [{"name": "tiny", "source": str(tiny_mcp), "version": version}]}},
                            env=env, keep=True)
    return {"stable": serve("1"), "canary": serve("2"), "slow": serve("3", {"MCP_FAULT_DELAY_MS": str(SLOW_DELAY_MS)}),
            "doomed": serve("1")}


@pytest.fixture(scope="session")
def pools(upstreams) -> dict:
    """The gateway config's pools: one per upstream, ``pair`` (stable + doomed) and ``dead`` (nobody listens)."""
    def pool(*members, **options):
        return {"members": [{"name": name, "url": url} for name, url in members],
                "health": {"interval_s": 0.5, "timeout_s": 1.0}, **options}
    url = {name: server.url for name, server in upstreams.items()}
    return {"a": pool(("stable", url["stable"])), "b": pool(("canary", url["canary"]), probe=True),
            "slow": pool(("slow", url["slow"]), probe=True),
            "pair": pool(("stable", url["stable"]), ("doomed", url["doomed"]), breaker={"cool_down_s": 120}),
            "dead": pool(("nobody", f"http://127.0.0.1:{free_port()}"))}


@pytest.fixture(scope="module")
def start_gateway(tmp_path_factory):
    started: list[GatewayProcess] = []

    def start(config: dict, rules: dict, env: dict[str, str] | None = None) -> GatewayProcess:
        gateway = GatewayProcess(config, rules, tmp_path_factory.mktemp("gateway"), env=env)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
