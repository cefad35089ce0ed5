"""The measurement log: PCR replay, event checks, serialization, the launch measurements."""

from __future__ import annotations

import hashlib
import threading

import pytest

from mcp.config.runtime import config_from_dict
from mcp.governance.attestation.errors import AttestationError
from mcp.governance.attestation.log import ZERO_PCR, MeasurementEvent, MeasurementLog, replay
from mcp.governance.attestation.measure import canonical_config, code_files, code_measurement, config_measurement


def test_replay_is_sha256_of_old_value_and_digest():
    log = MeasurementLog(pcr=16)
    first, second = hashlib.sha256(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest()
    log.extend("code", "mcp2026", first)
    log.extend("model", "tiny:1", second)
    expected = hashlib.sha256(bytes.fromhex(ZERO_PCR) + bytes.fromhex(first)).digest()
    expected = hashlib.sha256(expected + bytes.fromhex(second)).hexdigest()
    assert replay(log.events()) == {16: expected}
    assert [e.kind for e in log.events()] == ["code", "model"]


def test_events_cross_a_pipe_as_plain_dicts():
    event = MeasurementEvent(23, "model", "tiny:1", "ab" * 32)
    assert MeasurementEvent.from_dict(event.to_dict()) == event
    with pytest.raises(AttestationError, match="not a sha256 hex digest"):
        MeasurementEvent.from_dict({**event.to_dict(), "digest": "xyz"})
    with pytest.raises(AttestationError, match="lacks or mistypes a field"):
        MeasurementEvent.from_dict({"pcr": 23, "kind": "model"})
    with pytest.raises(AttestationError, match="PCR index 24 is out of range"):
        MeasurementEvent.from_dict({**event.to_dict(), "pcr": 24})


def test_bad_digest_is_refused_and_leaves_no_event():
    log = MeasurementLog()
    with pytest.raises(AttestationError, match="sha256 hex digest"):
        log.extend("model", "tiny:1", "AB" * 32)  # uppercase: not the canonical form
    assert log.events() == ()


def test_sinks_see_events_in_log_order_across_threads():
    log, seen = MeasurementLog(), []
    log.add_sink(seen.append)
    threads = [threading.Thread(target=lambda i=i: log.extend("model", f"m{i}", f"{i:064x}")) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tuple(seen) == log.events() and len(seen) == 16


def test_code_measurement_covers_the_package_sources_and_is_cached():
    names = [relative for relative, _ in code_files()]
    assert "mcp/governance/attestation/log.py" in names and "mcp/commands/cli.py" in names
    assert names == sorted(names) and not any("__pycache__" in n for n in names)
    name, digest = code_measurement()
    assert name.startswith("mcp2026 ") and len(digest) == 64
    assert code_measurement() is code_measurement()


def test_config_digest_ignores_comments_order_and_listen_address(tmp_path):
    base = {"generation": {"max_tokens": 256, "temperature": 0.5}, "runtime": {"model_dir": str(tmp_path)}}
    reordered = {"runtime": {"model_dir": str(tmp_path)}, "generation": {"temperature": 0.5, "max_tokens": 256},
                 "serving": {"port": 9999}}
    changed = {**base, "generation": {"max_tokens": 255, "temperature": 0.5}}
    digest = config_measurement(config_from_dict(base), "a.yaml")[1]
    assert config_measurement(config_from_dict(reordered), "a.yaml")[1] == digest
    assert config_measurement(config_from_dict(changed), "a.yaml")[1] != digest
    assert b'"max_tokens":256' in canonical_config(config_from_dict(base))
