"""The bad-input corpus (tests/serving/corpus) against a real ``mcp2026 serve`` with its
sandboxed worker, over HTTP and gRPC: every case gets its status and its error, and the server
answers a good request after each."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import grpc
import httpx
import pytest
from google.protobuf import json_format

from mcp.serving.grpc._gen import inference_pb2 as pb

sys.path.insert(0, str(Path(__file__).parent / "corpus"))
from cases import check_http, expanded, http_content, load  # noqa: E402

pytestmark = pytest.mark.slow
MESSAGES = {"Infer": (pb.InferRequest, pb.InferResponse), "InferStream": (pb.InferRequest, pb.InferStreamResponse),
            "LoadModel": (pb.LoadModelRequest, pb.LoadModelResponse),
            "SwapModel": (pb.SwapModelRequest, pb.SwapModelResponse)}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def grpc_port() -> int:
    return _free_port()


@pytest.fixture(scope="module")
def server(start_server, tiny_mcp, grpc_port):
    return start_server({"runtime": {"device": "cpu", "num_threads": 1},
                         "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "isolation": "worker",
                                     "grpc": {"enabled": True, "port": grpc_port}}})


@pytest.fixture(scope="module")
def channel(server, grpc_port):
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as opened:
        yield opened


def _serves_on(server) -> None:
    reply = httpx.post(server.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 1}, timeout=60)
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("case", load("grpc.json"))
def test_grpc_case(server, channel, case):
    request_type, response_type = MESSAGES[case["rpc"]]
    if "raw_hex" in case:
        message, serialize = bytes.fromhex(case["raw_hex"]), None
    else:
        fields = expanded(case["request"], case, "request_lists", "request_strings")
        message, serialize = json_format.ParseDict(fields, request_type()), request_type.SerializeToString
    method = f"/mcp.v1.InferenceService/{case['rpc']}"
    make = channel.unary_stream if case["rpc"] == "InferStream" else channel.unary_unary
    call = make(method, request_serializer=serialize, response_deserializer=response_type.FromString)
    with pytest.raises(grpc.RpcError) as failed:
        answer = call(message, metadata=[tuple(pair) for pair in case.get("metadata", [])], timeout=60)
        list(answer) if case["rpc"] == "InferStream" else answer
    error = failed.value
    assert error.code() == grpc.StatusCode[case["code"]] and case["error"] in error.details(), (error.code(),
                                                                                               error.details())
    if "param" in case:
        assert dict(error.trailing_metadata() or ()).get("x-error-param") == case["param"]
    _serves_on(server)


@pytest.mark.parametrize("case", load("http.json"))
def test_http_case(server, case):
    response = httpx.request(case["method"], server.url + case["path"], content=http_content(case),
                             headers=[("content-type", "application/json"), *map(tuple, case.get("headers", []))],
                             timeout=60)
    check_http(case, response)
    if "pending" not in case:
        _serves_on(server)
