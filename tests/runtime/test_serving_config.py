"""The ``serving:`` section of mcp-config.yaml: defaults, resolution, and errors naming the key."""

from __future__ import annotations

import hashlib

import pytest

from mcp.base.errors import ConfigError
from mcp.config.runtime import config_from_dict

KEY = hashlib.sha256(b"secret").hexdigest()


def test_defaults_and_a_full_section():
    assert config_from_dict({}).serving.host == "127.0.0.1"
    serving = config_from_dict({"serving": {
        "port": 9000, "default_model": "b",
        "models": [{"name": "a", "source": "a.mcp"}, {"name": "b", "source": "b.mcp", "version": "2"}],
        "limits": {"max_n": 2}, "timeouts": {"shutdown_drain_s": 5.0},
        "tenants": [{"name": "acme", "key_sha256": [KEY], "role": "admin", "tokens_per_minute": 100}],
    }}).serving
    assert serving.port == 9000 and [m.version for m in serving.models] == ["1", "2"]
    assert serving.limits.max_n == 2 and serving.shutdown_drain_s == 5.0
    assert serving.tenants[0].role == "admin" and serving.tenants[0].key_sha256 == (KEY,)


@pytest.mark.parametrize("section, message", [
    ({"port": "80"}, "serving.port"),
    ({"models": [{"name": "a"}]}, "serving.models.0.source"),
    ({"models": [{"name": "a", "source": "x"}, {"name": "a", "source": "y"}]}, "'a:1' appears twice"),
    ({"default_model": "zz"}, "serving.default_model"),
    ({"tenants": [{"name": "t", "key_sha256": ["plain-key"]}]}, "is not a sha256 hex digest"),
    ({"tenants": [{"name": "t", "key_sha256": [KEY], "role": "root"}]}, "serving.tenants.0.role"),
    ({"limits": {"max_body_bytes": 0}}, "serving.limits.max_body_bytes"),
])
def test_errors_name_the_key(section, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"serving": section})


@pytest.mark.parametrize("host, console, served", [
    ("127.0.0.1", None, True), ("localhost", None, True), ("::1", None, True),  # loopback: on by default
    ("0.0.0.0", None, False), ("10.1.2.3", None, False),  # reachable from elsewhere: off unless asked for
    ("0.0.0.0", True, True), ("127.0.0.1", False, False)])
def test_the_console_is_served_on_loopback_unless_the_config_says(host, console, served):
    section = {"host": host} if console is None else {"host": host, "console": console}
    assert config_from_dict({"serving": section}).serving.console_served is served
