"""``serving.isolation`` and ``serving.worker``: defaults per platform, limits, bad values."""

from __future__ import annotations

import pytest

from mcp.base.errors import ConfigError
from mcp.config.isolation import WorkerLimits, address_space_bytes, default_isolation, resolve_isolation
from mcp.config.runtime import config_from_dict


def test_worker_is_the_default_on_linux_only():
    assert default_isolation("linux") == "worker"
    assert default_isolation("darwin") == "none" and default_isolation("win32") == "none"
    assert config_from_dict({}).serving.isolation == default_isolation()


def test_worker_is_refused_where_there_is_no_sandbox():
    with pytest.raises(ConfigError, match="isolation: worker needs Linux .* use isolation: none"):
        resolve_isolation("worker", "cfg.yaml", platform="darwin")
    assert resolve_isolation("none", "cfg.yaml", platform="darwin") == "none"


def test_the_worker_section_is_read():
    config = config_from_dict({"serving": {"isolation": "none", "worker": {
        "address_space_gib": 8, "max_open_files": 256, "network_namespace": False,
        "restart_backoff_s": 1, "max_restarts_per_minute": 3, "spare_workers": 0}}})
    assert config.serving.isolation == "none"
    limits = config.serving.worker
    assert (limits.address_space_gib, limits.max_open_files, limits.network_namespace) == (8, 256, False)
    assert (limits.restart_backoff_s, limits.max_restarts_per_minute) == (1, 3)
    assert limits.spare_workers == 0 and config_from_dict({}).serving.worker.spare_workers == 1


@pytest.mark.parametrize("serving, text", [
    ({"isolation": "process"}, "serving.isolation"),
    ({"worker": {"max_open_files": 10}}, "serving.worker.max_open_files"),
    ({"worker": {"address_space_gib": "lots"}}, "serving.worker.address_space_gib"),
    ({"worker": {"address_space_gib": -1}}, "address_space_gib must be positive, auto or unlimited"),
    ({"worker": {"seccom": False}}, "serving.worker.seccom: unknown key"),
    ({"worker": {"spare_workers": -1}}, "serving.worker.spare_workers"),
    ({"worker": {"restart_backoff_s": 5, "restart_backoff_max_s": 1}}, "restart_backoff_max_s must be at least"),
])
def test_bad_values_are_config_errors(serving, text):
    with pytest.raises(ConfigError, match=text):
        config_from_dict({"serving": serving})


def test_the_address_space_limit():
    model = 100 << 20
    assert address_space_bytes(WorkerLimits(), model, "cpu") == (16 << 30) + 2 * model
    assert address_space_bytes(WorkerLimits(), model, "cuda") is None  # CUDA reserves far more than it uses
    assert address_space_bytes(WorkerLimits(address_space_gib=4.0), model, "cuda") == 4 << 30
    assert address_space_bytes(WorkerLimits(unlimited_address_space=True), model, "cpu") is None
