"""``serving.grpc`` in mcp-config.yaml: off unless enabled, a checked port."""

from __future__ import annotations

import pytest

from mcp.base.errors import ConfigError
from mcp.config.runtime import config_from_dict


def test_grpc_is_off_unless_enabled():
    assert config_from_dict({}).serving.grpc_port is None
    assert config_from_dict({"serving": {"grpc": {"port": 6000}}}).serving.grpc_port is None
    assert config_from_dict({"serving": {"grpc": {"enabled": True}}}).serving.grpc_port == 50051
    assert config_from_dict({"serving": {"grpc": {"enabled": True, "port": 0}}}).serving.grpc_port == 0


@pytest.mark.parametrize("grpc, text", [
    ({"enabled": True, "port": 70000}, "serving.grpc.port: Input should be less than or equal to 65535"),
    ({"enabled": "yes"}, "serving.grpc.enabled: Input should be a valid boolean"),
    ({"host": "0.0.0.0"}, "serving.grpc.host: unknown key"),
])
def test_bad_grpc_settings_name_the_key(grpc, text):
    with pytest.raises(ConfigError, match=text):
        config_from_dict({"serving": {"grpc": grpc}})
