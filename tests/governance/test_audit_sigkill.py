"""No request loses its audit record, on SQLite and PostgreSQL, streamed and not: a real server
under concurrent load has its model's worker SIGKILLed (every request answered meanwhile, 200 or
503, has exactly one record), then is itself SIGKILLed (every request acknowledged before has its
record), and ``mcp2026 audit verify`` passes."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field

import httpx
import pytest
from sqlalchemy import select

from mcp.commands.cli import main
from mcp.governance.audit import schema
from mcp.governance.audit.database import open_audit_engine

pytestmark = pytest.mark.slow
NUM_CLIENTS = 6


@dataclass
class Load:
    """Clients sending requests until stopped: what came back."""

    server: object
    stream: bool
    acknowledged: list[str] = field(default_factory=list)  # ids of requests answered in full
    answered: list[int] = field(default_factory=list)  # the status of every request that got an answer
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        self.stop.clear()
        self.threads = [threading.Thread(target=self._client, args=(k,)) for k in range(NUM_CLIENTS)]
        for thread in self.threads:
            thread.start()
        return self

    def wait_for(self, num_acknowledged: int) -> None:
        deadline = time.monotonic() + 60
        while len(self.acknowledged) < num_acknowledged:
            assert time.monotonic() < deadline, f"only {len(self.acknowledged)} requests were answered"
            time.sleep(0.05)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _client(self, k: int) -> None:
        with httpx.Client(base_url=self.server.url, timeout=60) as http:
            for i in range(1000):  # bounded: the test stops it long before
                if self.stop.is_set():
                    return
                body = {"model": "tiny", "prompt": f"client {k} says {i}", "max_tokens": 24, "ignore_eos": True,
                        "temperature": 0.0, "stream": self.stream}
                try:
                    self._one(http, body)
                except httpx.TransportError:
                    return  # the server is gone

    def _one(self, http: httpx.Client, body: dict) -> None:
        if not self.stream:
            response = http.post("/v1/completions", json=body)
            self.answered.append(response.status_code)
            if response.status_code == 200:
                self.acknowledged.append(response.json()["id"])
            return
        with http.stream("POST", "/v1/completions", json=body) as response:
            events = [line[5:].strip() for line in response.iter_lines() if line.startswith("data:")]
        self.answered.append(response.status_code)
        chunks = [json.loads(e) for e in events if e != "[DONE]"]
        if events and events[-1] == "[DONE]" and chunks and "error" not in chunks[-1]:
            self.acknowledged.append(chunks[0]["id"])


def _records(audit_url: str) -> list[tuple[str, str]]:
    engine = open_audit_engine(audit_url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(
                select(schema.records.c.request_id, schema.records.c.status).order_by(schema.records.c.seq))]
    finally:
        engine.dispose()


def _wait_records(audit_url: str, count: int) -> list[tuple[str, str]]:
    """The records once there are ``count`` (a failed stream's record is written as it ends, not awaited)."""
    deadline = time.monotonic() + 30
    while len(records := _records(audit_url)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return records


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_sigkills_of_the_worker_and_the_server_lose_no_record(start_server, tiny_mcp, tmp_path, audit_url,
                                                              stream: bool, capsys) -> None:
    key_file = tmp_path / "audit.key"
    server = start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "worker": {"restart_backoff_s": 0.1},
                    "governance": {"audit_url": audit_url, "audit_key_file": str(key_file)}},
    })
    load = Load(server, stream).start()
    load.wait_for(12)
    os.kill(server.worker_pid("tiny:1"), signal.SIGKILL)  # requests in flight end with 503 / an error event
    load.wait_for(len(load.acknowledged) + 12)  # served again by the restarted worker
    load.end()
    records = _wait_records(audit_url, len(load.answered))
    assert set(load.answered) <= {200, 503}, load.answered
    assert len(records) == len(load.answered), "each answered request has exactly one record"
    assert set(load.acknowledged) <= {request_id for request_id, _ in records}
    assert {status for _, status in records} <= {"ok", "error:worker_unavailable"}

    load = Load(server, stream).start()
    load.wait_for(12)
    server.process.kill()  # SIGKILL, requests in flight
    server.process.wait()
    load.end()
    recorded = {request_id for request_id, _ in _records(audit_url)}
    missing = set(load.acknowledged) - recorded
    assert not missing, f"{len(missing)} acknowledged request(s) have no record"
    assert main(["audit", "--db", audit_url, "--key-file", str(key_file), "verify"]) == 0
    assert "audit chain ok" in capsys.readouterr().out
