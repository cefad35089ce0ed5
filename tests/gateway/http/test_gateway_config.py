"""The gateway config file: defaults, and errors that name the key."""

from __future__ import annotations

import pytest

from mcp.gateway.config import parse_gateway_config
from mcp.gateway.errors import GatewayConfigError
from mcp.gateway.http.launch import check_pools
from mcp.gateway.routing import parse_route_table


def test_defaults_and_pools():
    config = parse_gateway_config({"pools": {"a": {"members": [{"name": "m1", "url": "http://127.0.0.1:8000/"}]}}})
    [pool] = config.pools
    assert (pool.name, pool.members[0].url, pool.max_attempts, pool.breaker.failure_threshold) == \
        ("a", "http://127.0.0.1:8000", 3, 3)
    assert (config.port, config.registry_url, config.canary_controller) == (8080, None, True)


@pytest.mark.parametrize("document, message", [
    ({"pools": {}}, "pools: Dictionary should have at least 1 item"),
    ({"pools": {"a": {"members": [{"name": "m", "url": "nowhere"}]}}}, "pools.a.members.0.url"),
    ({"pools": {"a": {"members": [{"name": "m", "url": "http://x"}], "retries": 2}}}, "pools.a.retries: Extra inputs"),
    ({"pools": {"a": {"members": [{"name": "m", "url": "http://x"}, {"name": "m", "url": "http://y"}]}}},
     "pools.a.members: member names must be unique"),
    ({"gateway": {"tenants": [{"name": "t", "key_sha256": ["abc"]}]},
      "pools": {"a": {"members": [{"name": "m", "url": "http://x"}]}}}, "gateway.tenants.0.key_sha256"),
    ({"pools": {"a": {"members": [{"name": "m", "url": "http://x"}], "api_key_env": "MCP_NO_SUCH_VAR"}}},
     "$MCP_NO_SUCH_VAR is not set"),
    ([1, 2], "the gateway config is a mapping"),
    ({"pools": {"a": {"members": [{"name": "m"}]}}}, "give exactly one of url (a remote server) or local"),
])
def test_bad_configs_name_the_key(document, message):
    with pytest.raises(GatewayConfigError) as error:
        parse_gateway_config(document, "gw.yaml")
    assert message in str(error.value)


def test_every_pool_the_rules_name_must_be_configured():
    config = parse_gateway_config({"pools": {"a": {"members": [{"name": "m", "url": "http://x"}]}}})
    table = parse_route_table("""
routes:
  - {name: r, conditions: {tenant: t}, backend: {model_id: "m:1", instance_pool: gpu},
     fallbacks: [{backend: {model_id: "m:1", instance_pool: spare}}]}
default: {backend: {model_id: "m:1", instance_pool: a}}
""", source="routes.yaml")
    with pytest.raises(GatewayConfigError, match=r"routes.yaml names pool\(s\) gpu, spare that the gateway config"):
        check_pools(table, config)
