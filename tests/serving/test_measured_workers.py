"""The measured launch reaches the workers: with ``serving.isolation: worker`` and an
``attestation:`` section, each worker is handed the launch log and keeps it, and the model
event carries the digest the worker took of the file it opened read-only."""

from __future__ import annotations

import pytest

from mcp.config.runtime import config_from_dict
from mcp.config.serving import ServedModel
from mcp.modelfile.hashing import file_sha256
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost
from mcp.serving.isolation.models import worker_report
from mcp.serving.measured import model_loader, observe_models, start_attestation

pytestmark = pytest.mark.slow  # starts a worker process


def test_workers_keep_the_launch_log_and_measure_the_file_they_opened(tiny_mcp, tmp_path):
    config = config_from_dict({
        "serving": {"isolation": "worker", "models": [{"name": "tiny", "source": str(tiny_mcp)}]},
        "attestation": {"key_file": str(tmp_path / "attestation.key")},
    })
    attestor = start_attestation(config, None, None)
    launch = [event.to_dict() for event in attestor.log.events()]
    assert [event["kind"] for event in launch] == ["code", "config"]
    try:
        with Session(config) as session:
            host = ModelHost(session, "tiny", model_loader(session, attestor))
            observe_models(attestor, host)
            try:
                loaded = host.load(ServedModel("tiny", str(tiny_mcp)))
                report = worker_report(loaded.model)
                assert report["measurements"] == launch
                assert report["model_sha256"] == file_sha256(tiny_mcp)
                model_event = attestor.log.events()[-1]
                assert (model_event.kind, model_event.name, model_event.digest) == ("model", loaded.key,
                                                                                    file_sha256(tiny_mcp))
            finally:
                host.close()
    finally:
        attestor.close()
