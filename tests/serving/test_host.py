"""``ModelHost``: resolving names, swapping versions while requests hold the old one, draining.

Tiny random-weight models (two layers): what is tested is routing and lifetimes, not text.
"""

from __future__ import annotations

import threading
import time

import pytest

from mcp.base.errors import ConfigError, ModelNotFoundError
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost

GREEDY = {"temperature": 0.0, "max_tokens": 4, "raw": True}


@pytest.fixture
def host(tiny_mcp):
    # isolation none: these tests watch Session.models to see a version unload, and routing and
    # lifetimes do not depend on where the engine runs (worker-backed hosts: tests/serving/isolation)
    serving = ServingConfig(isolation="none")
    session = Session(RuntimeConfig(device="cpu", num_threads=1, serving=serving))
    host = ModelHost(session)
    yield host
    host.close()
    session.close()


def _wait_unloaded(host: ModelHost, key: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if key not in host.session.models:
            return True
        time.sleep(0.01)
    return False


def test_names_versions_and_the_default(host, tiny_mcp):
    first = host.load(ServedModel("tiny", str(tiny_mcp), "1"))
    other = host.load(ServedModel("other", str(tiny_mcp), "7"))
    assert first.load_to_ready_s > 0
    with host.acquire(None) as served:  # no default configured: the first name loaded
        assert served is first and served.in_flight == 1
    assert first.in_flight == 0
    with host.acquire("other") as served, host.acquire("other:7") as same:
        assert served is same is other and other.in_flight == 2
    for unknown in ("nope", "tiny:2", "other:1"):
        with pytest.raises(ModelNotFoundError, match="does not exist or is not loaded"):
            host.resolve_and_hold(unknown)
    with pytest.raises(ConfigError, match="already loaded"):
        host.load(ServedModel("tiny", str(tiny_mcp), "1"))


def test_a_swap_keeps_the_old_version_until_its_requests_end(host, tiny_mcp):
    old = host.load(ServedModel("tiny", str(tiny_mcp), "1"))
    held = host.resolve_and_hold("tiny")  # a request in flight on version 1
    new = host.load(ServedModel("tiny", str(tiny_mcp), "2"))
    assert old.retired and not new.retired
    with host.acquire("tiny") as served:
        assert served is new  # new requests go to the new version
    with pytest.raises(ModelNotFoundError):
        host.resolve_and_hold("tiny:1")  # the retired version takes no new request
    assert held.model.infer("one two", **GREEDY).usage.completion_tokens == 4  # the old one still serves
    assert "tiny:1" in host.session.models
    host.release(held)
    assert _wait_unloaded(host, "tiny:1")
    assert [v.key for v in host.versions()] == ["tiny:2"]


def test_load_without_activate_then_swap_and_unload(host, tiny_mcp):
    host.load(ServedModel("tiny", str(tiny_mcp), "1"))
    canary = host.load(ServedModel("tiny", str(tiny_mcp), "2"), activate=False)
    assert host.current()["tiny"].version == "1"
    with host.acquire("tiny:2") as served:
        assert served is canary
    host.swap("tiny", "2")
    assert host.current()["tiny"] is canary and _wait_unloaded(host, "tiny:1")
    host.unload("tiny")
    assert not host.ready and _wait_unloaded(host, "tiny:2")
    with pytest.raises(ModelNotFoundError):
        host.unload("tiny")


def test_concurrent_requests_across_a_swap_all_finish(host, tiny_mcp):
    host.load(ServedModel("tiny", str(tiny_mcp), "1"))
    served: list[str] = []
    errors: list[BaseException] = []

    def client() -> None:
        for _ in range(10):
            try:
                with host.acquire("tiny") as version:
                    version.model.infer("a b c", **GREEDY)
                    served.append(version.version)
            except BaseException as exc:  # noqa: BLE001 - counted below
                errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    host.load(ServedModel("tiny", str(tiny_mcp), "2"))
    for thread in threads:
        thread.join()
    assert errors == [] and len(served) == 40
    assert served[-1] == "2" and _wait_unloaded(host, "tiny:1")
