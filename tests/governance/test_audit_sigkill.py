"""No acknowledged request loses its audit record: a real server under concurrent load is killed
with SIGKILL, then every request that got a 200 has its record and the chain verifies."""

from __future__ import annotations

import sqlite3
import threading
import time

import httpx
import pytest

from mcp.governance.audit.database import open_audit_engine
from mcp.governance.audit.verify import verify

pytestmark = pytest.mark.slow


def test_sigkill_under_load_loses_no_acknowledged_record(start_server, tiny_mcp, tmp_path) -> None:
    audit_url = f"sqlite:///{tmp_path / 'audit.db'}"
    server = start_server({
        "runtime": {"device": "cpu"},
        "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}],
                    "governance": {"audit_url": audit_url, "audit_key_file": str(tmp_path / "audit.key")}},
    })
    acknowledged: list[str] = []
    stop = threading.Event()

    def client(k: int) -> None:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            for i in range(200):  # bounded: the kill ends it long before
                if stop.is_set():
                    return
                try:
                    response = http.post("/v1/completions", json={"model": "tiny", "prompt": f"client {k} says {i}",
                                                                  "max_tokens": 2, "temperature": 0})
                except httpx.TransportError:
                    return  # the server is gone
                if response.status_code == 200:
                    acknowledged.append(response.json()["id"])

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.process.kill()  # SIGKILL, requests in flight
    server.process.wait()
    stop.set()
    for thread in threads:
        thread.join()
    assert len(acknowledged) >= 40
    connection = sqlite3.connect(tmp_path / "audit.db")
    recorded = {row[0] for row in connection.execute("SELECT request_id FROM audit_records")}
    connection.close()
    assert set(acknowledged) <= recorded, f"{len(set(acknowledged) - recorded)} acknowledged request(s) have no record"
    report = verify(open_audit_engine(audit_url))
    assert report.ok, report.problems
