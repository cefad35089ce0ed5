"""The interceptor on a server with tenant keys: authentication, tenant and model metadata, SLO
classes, the admin role and rate limits, for unary and streaming calls alike."""

from __future__ import annotations

import grpc
import pytest

from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.tenants import hash_key

ADMIN, USER, LIMITED = "admin-key", "user-key", "limited-key"
REQUEST = pb.InferRequest(prompt="a b", sampling=pb.SamplingParams(max_tokens=2, temperature=0.0, ignore_eos=True))


@pytest.fixture(scope="module")
def server(grpc_server_factory, tiny_config):
    return grpc_server_factory(tiny_config(tenants=[
        {"name": "ops", "key_sha256": [hash_key(ADMIN)], "role": "admin"},
        {"name": "acme", "key_sha256": [hash_key(USER)]},
        {"name": "small", "key_sha256": [hash_key(LIMITED)], "requests_per_minute": 2},
    ]))


@pytest.fixture(scope="module")
def stub(server):
    return server.stub()


def _headers(key: str | None = USER, **extra: str) -> list[tuple[str, str]]:
    headers = [("authorization", f"Bearer {key}")] if key else []
    return headers + [(name.replace("_", "-"), value) for name, value in extra.items()]


def _fails(call, metadata, request=REQUEST) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        result = call(request, metadata=metadata)
        if not isinstance(result, pb.InferResponse):
            list(result)
    return caught.value


@pytest.fixture(params=["unary", "stream"])
def call(request, stub):
    return stub.Infer if request.param == "unary" else stub.InferStream


@pytest.mark.parametrize("metadata, code, text", [
    (_headers(None), grpc.StatusCode.UNAUTHENTICATED, "no API key"),
    (_headers("wrong"), grpc.StatusCode.UNAUTHENTICATED, "matches no tenant"),
    ([("authorization", f"Basic {USER}")], grpc.StatusCode.UNAUTHENTICATED, "Authorization: Bearer"),
    (_headers(x_tenant_id="ops"), grpc.StatusCode.PERMISSION_DENIED, "x-tenant-id 'ops' does not match the API "
                                                                     "key's tenant 'acme'"),
    (_headers(x_sla_class="gold"), grpc.StatusCode.INVALID_ARGUMENT, "unknown SLO class 'gold'"),
    (_headers(x_model_version="1 2"), grpc.StatusCode.INVALID_ARGUMENT, "x-model-version '1 2' is malformed"),
    (_headers(x_model_version="v:1"), grpc.StatusCode.INVALID_ARGUMENT, "x-model-version 'v:1' is malformed"),
    (_headers(x_model_id="tiny model"), grpc.StatusCode.INVALID_ARGUMENT, "x-model-id 'tiny model' is malformed"),
    (_headers(x_tenant_id="a/b"), grpc.StatusCode.INVALID_ARGUMENT, "x-tenant-id 'a/b' is malformed"),
    (_headers() + [("x-sla-class", "low"), ("x-sla-class", "high")], grpc.StatusCode.INVALID_ARGUMENT,
     "x-sla-class is sent more than once"),
])
def test_bad_metadata_gets_a_status_naming_the_header(call, metadata, code, text):
    error = _fails(call, metadata)
    assert error.code() == code and text in error.details()


def test_model_metadata_selects_and_pins_the_version(server, stub):
    assert stub.Infer(REQUEST, metadata=_headers(x_model_id="tiny")).model == "tiny:1"
    assert stub.Infer(REQUEST, metadata=_headers(x_model_id="tiny", x_model_version="1")).model == "tiny:1"
    request = pb.InferRequest(model="tiny", prompt="a", sampling=pb.SamplingParams(max_tokens=1))
    assert stub.Infer(request, metadata=_headers(x_model_version="1")).model == "tiny:1"
    pinned = _fails(stub.InferStream, _headers(x_model_id="tiny", x_model_version="7"))
    assert pinned.code() == grpc.StatusCode.NOT_FOUND and "'tiny:7' does not exist" in pinned.details()
    clash = _fails(stub.Infer, _headers(x_model_id="other"), request)
    assert clash.code() == grpc.StatusCode.INVALID_ARGUMENT and "differ" in clash.details()
    assert dict(clash.trailing_metadata())["x-error-param"] == "model"
    lonely = _fails(stub.Infer, _headers(x_model_version="1"))
    assert lonely.code() == grpc.StatusCode.INVALID_ARGUMENT and "needs a model to pin" in lonely.details()
    contradiction = _fails(stub.Infer, _headers(x_model_id="tiny:1", x_model_version="2"))
    assert contradiction.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "'tiny:1' names version '1' but x-model-version is '2'" in contradiction.details()


def test_sla_class_and_tenant_reach_the_engine(server, stub):
    labels = {"model": "tiny", "version": "1", "slo_class": "high", "finished_reason": "length"}
    before = server.metric("mcp_request_success_total", **labels)
    chunks = list(stub.InferStream(REQUEST, metadata=_headers(x_sla_class="HIGH", x_tenant_id="acme")))
    assert chunks[-1].finish_reason == pb.FINISH_REASON_LENGTH
    assert server.metric("mcp_request_success_total", **labels) == before + 1


def test_admin_rpcs_need_the_admin_role(server, stub, tiny_mcp):
    load = pb.LoadModelRequest(name="tiny", source=str(tiny_mcp), version="2")
    for rpc, request in ((stub.LoadModel, load), (stub.SwapModel, pb.SwapModelRequest(name="tiny", version="1")),
                         (stub.UnloadModel, pb.UnloadModelRequest(name="tiny"))):
        error = _fails(rpc, _headers(USER), request)
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED and "role: admin" in error.details()
    assert [v.version for v in server.host.versions()] == ["1"]
    as_user = stub.ListModels(pb.ListModelsRequest(), metadata=_headers(USER)).models
    as_admin = stub.ListModels(pb.ListModelsRequest(), metadata=_headers(ADMIN)).models
    assert [(m.name, m.version, m.current, m.source) for m in as_user] == [("tiny", "1", True, "")]
    assert as_admin[0].source == str(tiny_mcp) and as_admin[0].load_to_ready_s > 0


def test_rate_limit_is_resource_exhausted_with_retry_after(stub):
    for _ in range(2):
        stub.Infer(REQUEST, metadata=_headers(LIMITED))
    error = _fails(stub.InferStream, _headers(LIMITED))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "2 requests per minute" in error.details()
    trailing = dict(error.trailing_metadata())
    assert 1 <= int(trailing["retry-after"]) <= 60 and trailing["x-error-code"] == "rate_limit_exceeded"
    assert stub.Infer(REQUEST, metadata=_headers(USER)).usage.completion_tokens == 2  # others are not limited
