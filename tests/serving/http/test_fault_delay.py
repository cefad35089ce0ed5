"""The ``MCP_FAULT_DELAY_MS`` test and chaos knob: read once at start, checked."""

from __future__ import annotations

import pytest

from mcp.base.errors import ConfigError
from mcp.serving.state import FAULT_DELAY_ENV, fault_delay_from_env


@pytest.mark.parametrize("value, seconds", [(None, 0.0), ("", 0.0), ("1500", 1.5), ("2.5", 0.0025)])
def test_delay_in_milliseconds(monkeypatch, value, seconds):
    if value is None:
        monkeypatch.delenv(FAULT_DELAY_ENV, raising=False)
    else:
        monkeypatch.setenv(FAULT_DELAY_ENV, value)
    assert fault_delay_from_env() == seconds


@pytest.mark.parametrize("value, message", [("slow", "is 'slow'; give a number of milliseconds"),
                                            ("-5", "is -5; give a number of milliseconds >= 0")])
def test_bad_values_are_config_errors(monkeypatch, value, message):
    monkeypatch.setenv(FAULT_DELAY_ENV, value)
    with pytest.raises(ConfigError, match=message):
        fault_delay_from_env()
