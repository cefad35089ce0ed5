"""Every request that passed admission leaves exactly one audit record, whatever ends it: a real
``mcp2026 serve`` (the real model in its worker, governance on) whose worker is SIGKILLed under a
plain HTTP request, a stream and a unary gRPC call, and requests whose client goes away.

Before the fix, a plain request whose worker died got its 503 and no record at all, and the gRPC
call's record said "cancelled"."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import threading
import time
from pathlib import Path

import grpc
import httpx
import pytest

from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc

pytestmark = pytest.mark.slow
LONG = {"prompt": "Count from one to a thousand:", "max_tokens": 2000, "ignore_eos": True, "temperature": 0.0}


@pytest.fixture(scope="module")
def served(start_server, smollm2_mcp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("audited")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        grpc_port = sock.getsockname()[1]
    server = start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "serving": {"models": [{"name": "smol", "source": str(smollm2_mcp)}],
                    "grpc": {"enabled": True, "port": grpc_port}, "worker": {"restart_backoff_s": 0.1},
                    "governance": {"audit_url": f"sqlite:///{folder / 'audit.db'}",
                                   "audit_key_file": str(folder / "audit.key")}},
    })
    return server, folder / "audit.db", grpc_port


def _records(db: Path) -> list[tuple[str, str, str]]:
    connection = sqlite3.connect(db)
    try:
        return connection.execute("SELECT request_id, route, status FROM audit_records ORDER BY seq").fetchall()
    finally:
        connection.close()


def _new_records(db: Path, before: int, count: int) -> list[tuple[str, str, str]]:
    """The records after the first ``before``, once there are ``count`` of them (a record a client
    that left never waits for is written just after)."""
    deadline = time.monotonic() + 30
    while len(records := _records(db)) < before + count and time.monotonic() < deadline:
        time.sleep(0.05)
    return records[before:]


def _kill_worker_while_running(server) -> None:
    deadline = time.monotonic() + 60
    while server.metric("mcp_num_requests_running") < 1:
        assert time.monotonic() < deadline, "the request never started"
        time.sleep(0.05)
    os.kill(server.worker_pid("smol:1"), signal.SIGKILL)


def _wait_serving(server) -> None:
    deadline = time.monotonic() + 120
    while httpx.get(server.url + "/ready").status_code != 200:
        assert time.monotonic() < deadline, "the worker was not restarted"
        time.sleep(0.1)


def test_a_plain_request_whose_worker_dies_is_recorded(served) -> None:
    server, db, _ = served
    before = len(_records(db))
    replies: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: replies.append(
        httpx.post(server.url + "/v1/completions", json=LONG, timeout=120)))
    thread.start()
    _kill_worker_while_running(server)
    thread.join(120)
    assert replies[0].status_code == 503
    assert [(r[1], r[2]) for r in _new_records(db, before, 1)] == [("POST /v1/completions",
                                                                    "error:worker_unavailable")]
    _wait_serving(server)


def test_a_stream_whose_worker_dies_is_recorded_once(served) -> None:
    server, db, _ = served
    before = len(_records(db))
    with httpx.stream("POST", server.url + "/v1/completions", json={**LONG, "stream": True}, timeout=120) as reply:
        lines = reply.iter_lines()
        assert next(line for line in lines if line.startswith("data:"))
        os.kill(server.worker_pid("smol:1"), signal.SIGKILL)
        assert '"worker_unavailable"' in "".join(lines)
    assert [(r[1], r[2]) for r in _new_records(db, before, 1)] == [("POST /v1/completions",
                                                                    "error:worker_unavailable")]
    _wait_serving(server)


def test_a_grpc_call_whose_worker_dies_is_recorded_as_an_error(served) -> None:
    server, db, grpc_port = served
    before = len(_records(db))
    errors: list[grpc.RpcError] = []
    request = pb.InferRequest(prompt=LONG["prompt"], sampling=pb.SamplingParams(
        max_tokens=2000, ignore_eos=True, temperature=0.0))

    def call() -> None:
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            try:
                pb_grpc.InferenceServiceStub(channel).Infer(request, timeout=120)
            except grpc.RpcError as error:
                errors.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    _kill_worker_while_running(server)
    thread.join(120)
    assert errors[0].code() == grpc.StatusCode.UNAVAILABLE
    assert [(r[1], r[2]) for r in _new_records(db, before, 1)] == [("grpc /mcp.v1.InferenceService/Infer",
                                                                    "error:worker_unavailable")]
    _wait_serving(server)


def test_a_client_that_goes_away_leaves_one_record(served) -> None:
    server, db, _ = served
    before = len(_records(db))
    with pytest.raises(httpx.ReadTimeout):  # a plain request: nothing comes before the end, so the client gives up
        httpx.post(server.url + "/v1/completions", json=LONG, timeout=httpx.Timeout(60, read=1.0))
    with httpx.stream("POST", server.url + "/v1/completions", json={**LONG, "stream": True}, timeout=60) as reply:
        assert next(line for line in reply.iter_lines() if line.startswith("data:"))  # then it hangs up
    records = _new_records(db, before, 2)
    assert [(r[1], r[2]) for r in records] == [("POST /v1/completions", "cancelled")] * 2
    assert records[0][0] != records[1][0]
    deadline = time.monotonic() + 60
    while server.metric("mcp_num_requests_running") > 0:  # both ended in the worker: no more records for them
        assert time.monotonic() < deadline, "the abandoned requests kept running"
        time.sleep(0.05)
    assert len(_records(db)) == before + 2


def test_a_stream_whose_client_hangs_up_at_once_leaves_one_record(served) -> None:
    """The client sends a streamed request and closes the connection without reading a byte: the
    response may end before its body generator starts, whose own cleanup then never runs."""
    server, db, _ = served
    before = len(_records(db))
    body = json.dumps({**LONG, "stream": True}).encode()
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    records = _new_records(db, before, 1)
    assert [(r[1], r[2]) for r in records] == [("POST /v1/completions", "cancelled")]
    deadline = time.monotonic() + 60
    while server.metric("mcp_num_requests_running") > 0:
        assert time.monotonic() < deadline, "the abandoned stream kept running"
        time.sleep(0.05)
    assert len(_records(db)) == before + 1
