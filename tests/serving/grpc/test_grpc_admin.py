"""LoadModel, SwapModel and UnloadModel while streams flow: in-flight calls end on the version
they started on, new ones go to the new version, none fails; health follows the models."""

from __future__ import annotations

import threading

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mcp.serving.grpc._gen import inference_pb2 as pb

REQUEST = pb.InferRequest(model="tiny", prompt="a b c",
                          sampling=pb.SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True))


@pytest.fixture(scope="module")
def server(grpc_server_factory, tiny_config):
    return grpc_server_factory(tiny_config())


@pytest.fixture(scope="module")
def stub(server):
    return server.stub()


class StreamingLoad:
    """``num_threads`` clients streaming REQUEST back to back; records which version served each."""

    def __init__(self, stub, num_threads: int = 4) -> None:
        self.served: list[str] = []
        self.failures: list[BaseException] = []
        self._stub, self._stop = stub, threading.Event()
        self._threads = [threading.Thread(target=self._client) for _ in range(num_threads)]

    def _client(self) -> None:
        while not self._stop.is_set():
            try:
                chunks = list(self._stub.InferStream(REQUEST))
                assert chunks[-1].finish_reason == pb.FINISH_REASON_LENGTH and len(chunks) == 5
                self.served.append(chunks[-1].model)
            except BaseException as exc:  # noqa: BLE001 - counted by the test
                self.failures.append(exc)

    def __enter__(self) -> StreamingLoad:
        for thread in self._threads:
            thread.start()
        return self

    def wait_for(self, num_more: int) -> None:
        target = len(self.served) + num_more
        while len(self.served) < target and not self.failures:
            threading.Event().wait(0.02)

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def _models(stub) -> list[tuple[str, bool]]:
    return [(m.version, m.current) for m in stub.ListModels(pb.ListModelsRequest()).models]


def test_load_swap_unload_under_streaming_load_drop_nothing(server, stub, tiny_mcp):
    with StreamingLoad(stub) as load:
        load.wait_for(8)
        loaded = stub.LoadModel(pb.LoadModelRequest(name="tiny", source=str(tiny_mcp), version="2"))
        assert loaded.model.current and loaded.model.version == "2" and 0 < loaded.model.load_to_ready_s < 30
        load.wait_for(8)
        standby = stub.LoadModel(pb.LoadModelRequest(name="tiny", source=str(tiny_mcp), version="3", standby=True))
        assert not standby.model.current and _models(stub) == [("2", True), ("3", False)]
        load.wait_for(8)
        assert stub.SwapModel(pb.SwapModelRequest(name="tiny", version="3")).model.current
        load.wait_for(8)
    assert load.failures == []
    served = load.served
    assert {"tiny:1", "tiny:2", "tiny:3"} <= set(served) and served[-1] == "tiny:3"
    first_v2, first_v3 = served.index("tiny:2"), served.index("tiny:3")
    assert set(served[first_v2 + 4:]) <= {"tiny:2", "tiny:3"}  # after a swap only the 4 in flight end on the old one
    assert set(served[first_v3 + 4:]) == {"tiny:3"}
    assert _models(stub) == [("3", True)]  # the replaced versions drained and unloaded
    retired = stub.UnloadModel(pb.UnloadModelRequest(name="tiny", version="3")).retired
    assert [(m.version, m.in_flight) for m in retired] == [("3", 0)]
    assert _models(stub) == []


def test_health_follows_the_models(server, stub, tiny_mcp):
    health = health_pb2_grpc.HealthStub(server.channel())
    if not server.host.ready:
        stub.LoadModel(pb.LoadModelRequest(name="tiny", source=str(tiny_mcp), version="4"))
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    stub.UnloadModel(pb.UnloadModelRequest(name="tiny"))
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.NOT_SERVING
    with pytest.raises(grpc.RpcError) as caught:
        stub.Infer(REQUEST)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    stub.LoadModel(pb.LoadModelRequest(name="tiny", source=str(tiny_mcp), version="5"))
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    assert stub.Infer(REQUEST).model == "tiny:5"


@pytest.mark.parametrize("rpc, request_, code, text", [
    ("SwapModel", pb.SwapModelRequest(name="tiny", version="9"), grpc.StatusCode.NOT_FOUND, "tiny:9 is not loaded"),
    ("UnloadModel", pb.UnloadModelRequest(name="nothing"), grpc.StatusCode.NOT_FOUND, "no model nothing is loaded"),
    ("LoadModel", pb.LoadModelRequest(name="x", source="no-such-file.mcp"), grpc.StatusCode.NOT_FOUND, "not found"),
    ("LoadModel", pb.LoadModelRequest(name="x", source="/no/such/file.mcp"), grpc.StatusCode.PERMISSION_DENIED,
     "outside the folders admin loads may read"),
    ("LoadModel", pb.LoadModelRequest(name="x"), grpc.StatusCode.INVALID_ARGUMENT, "source is empty"),
    ("LoadModel", pb.LoadModelRequest(name="x", source="m.mcp", precision="int3"), grpc.StatusCode.INVALID_ARGUMENT,
     "precision 'int3' is not one of auto, fp32"),
])
def test_admin_errors(server, stub, rpc, request_, code, text):
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, rpc)(request_)
    assert caught.value.code() == code and text in caught.value.details()


def test_loading_a_loaded_version_again_is_refused(server, stub, tiny_mcp):
    version = server.host.versions()[0].version
    with pytest.raises(grpc.RpcError) as caught:
        stub.LoadModel(pb.LoadModelRequest(name="tiny", source=str(tiny_mcp), version=version))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "already loaded" in caught.value.details()
