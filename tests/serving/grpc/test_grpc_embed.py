"""``Embed`` over a real gRPC channel on the real all-MiniLM-L6-v2: the SDK's vectors, token-id
inputs, usage, and bad input as INVALID_ARGUMENT naming what was wrong."""

from __future__ import annotations

import grpc
import pytest

from mcp.serving.grpc._gen import inference_pb2 as pb

TEXTS = ["The capital of France is Paris.", "北京是中国的首都", "print('hello')"]


@pytest.fixture(scope="module")
def server(grpc_server_factory, minilm_mcp, smollm2_auto_mcp):
    return grpc_server_factory({
        "runtime": {"device": "cpu", "num_threads": 1},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {"isolation": "none", "models": [{"name": "minilm", "source": str(minilm_mcp)},
                                                    {"name": "smollm2", "source": str(smollm2_auto_mcp)}]}})


@pytest.fixture(scope="module")
def stub(server):
    return server.stub()


def test_embed_gives_the_sdk_vectors(server, stub):
    reply = stub.Embed(pb.EmbedRequest(model="minilm", texts=TEXTS))
    expected = server.host.current()["minilm"].model.embed(TEXTS)
    assert reply.model == "minilm:1" and reply.id.startswith("embed-") and len(reply.embeddings) == 3
    for got, want in zip(reply.embeddings, expected.embeddings):
        assert len(got.values) == 384 and max(abs(a - b) for a, b in zip(got.values, want)) < 1e-6
    assert reply.usage.prompt_tokens == reply.usage.total_tokens == expected.usage.prompt_tokens


def test_token_ids_embed_as_their_text(stub):
    by_text = stub.Embed(pb.EmbedRequest(model="minilm", texts=["hello world"]))
    by_ids = stub.Embed(pb.EmbedRequest(model="minilm", token_ids=[pb.TokenIds(ids=[101, 7592, 2088, 102])]))
    assert max(abs(a - b) for a, b in zip(by_text.embeddings[0].values, by_ids.embeddings[0].values)) < 1e-6


def test_the_model_can_come_from_metadata(stub):
    reply = stub.Embed(pb.EmbedRequest(texts=["hi"]), metadata=(("x-model-id", "minilm"),))
    assert reply.model == "minilm:1"


@pytest.mark.parametrize(("request_kwargs", "message"), [
    ({"model": "minilm"}, "input is empty"),
    ({"model": "minilm", "texts": ["ok", ""]}, "input[1] is empty"),
    ({"model": "minilm", "texts": ["word " * 300]}, "embeds at most 256 tokens"),
    ({"model": "minilm", "texts": ["hi"], "dimensions": 64}, "cannot shorten them"),
    ({"model": "minilm", "texts": ["hi"], "token_ids": [pb.TokenIds(ids=[101])]}, "not both"),
    ({"model": "smollm2", "texts": ["hi"]}, "generates text and declares no pooling"),
])
def test_bad_input_is_invalid_argument(stub, request_kwargs, message):
    with pytest.raises(grpc.RpcError) as caught:
        stub.Embed(pb.EmbedRequest(**request_kwargs))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


def test_an_embedding_model_asked_to_infer_is_invalid_argument(stub):
    with pytest.raises(grpc.RpcError) as caught:
        stub.Infer(pb.InferRequest(model="minilm", prompt="Hello", sampling=pb.SamplingParams(max_tokens=3)))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "is an embedding model" in caught.value.details()
