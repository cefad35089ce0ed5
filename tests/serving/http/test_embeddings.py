"""``POST /v1/embeddings`` on a real ``mcp2026 serve`` through the official openai client: float and
base64 vectors equal to the SDK's, token-array inputs, usage, and bad input as clear 400s (an empty
list, an input past the model's limit, ``dimensions`` the model cannot give, the wrong model kind)."""

from __future__ import annotations

import base64
import struct

import httpx
import openai
import pytest

from mcp.config.runtime import config_from_dict
from mcp.runtime.session import Session

TEXTS = ["The capital of France is Paris.", "今天天气很好", "def add(a, b): return a + b"]


@pytest.fixture(scope="module")
def server(start_server, minilm_mcp, smollm2_auto_mcp):
    return start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {"isolation": "none", "models": [{"name": "minilm", "source": str(minilm_mcp)},
                                                    {"name": "smollm2", "source": str(smollm2_auto_mcp)}]},
    })


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def sdk_vectors(minilm_mcp):
    with Session(config_from_dict({"runtime": {"device": "cpu", "num_threads": 1}})) as session:
        return session.load_model(str(minilm_mcp)).embed(TEXTS).embeddings


def close(a, b) -> bool:
    return len(a) == len(b) == 384 and max(abs(x - y) for x, y in zip(a, b)) < 1e-5


def floats(embedding: list[float] | str) -> tuple[float, ...]:
    """A vector as the client hands it: floats, or (asked for base64 explicitly) the wire's base64 of
    little-endian float32s, which the client leaves to the caller."""
    if isinstance(embedding, str):
        raw = base64.b64decode(embedding)
        return struct.unpack(f"<{len(raw) // 4}f", raw)
    return tuple(embedding)


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_openai_client_gets_the_sdk_vectors(client, sdk_vectors, encoding_format):
    answer = client.embeddings.create(model="minilm", input=TEXTS, encoding_format=encoding_format)
    assert [item.index for item in answer.data] == [0, 1, 2] and answer.model == "minilm:1"
    assert all(close(floats(item.embedding), want) for item, want in zip(answer.data, sdk_vectors))
    assert answer.usage.prompt_tokens == answer.usage.total_tokens > 0


def test_the_client_default_asks_base64_and_decodes_it(client, sdk_vectors):
    answer = client.embeddings.create(model="minilm", input=TEXTS[0])  # the client sends encoding_format=base64
    assert len(answer.data) == 1 and close(answer.data[0].embedding, sdk_vectors[0])


def test_base64_is_little_endian_float32_on_the_wire(server, sdk_vectors):
    body = httpx.post(server.url + "/v1/embeddings",
                      json={"model": "minilm", "input": TEXTS[0], "encoding_format": "base64"}).json()
    raw = base64.b64decode(body["data"][0]["embedding"])
    assert len(raw) == 384 * 4 and close(struct.unpack("<384f", raw), sdk_vectors[0])
    assert body["object"] == "list" and body["data"][0]["object"] == "embedding"


def test_token_arrays_embed_as_their_text(client, server):
    ids = httpx.post(server.url + "/v1/embeddings", json={"model": "minilm", "input": "hello world"}).json()
    tokens = [101, 7592, 2088, 102]  # [CLS] hello world [SEP] in MiniLM's vocabulary
    by_ids = client.embeddings.create(model="minilm", input=[tokens], encoding_format="float")
    assert close(by_ids.data[0].embedding, ids["data"][0]["embedding"])
    assert by_ids.usage.prompt_tokens == 4


@pytest.mark.parametrize(("body", "status", "message"), [
    ({"model": "minilm", "input": []}, 400, "input"),
    ({"model": "minilm", "input": ""}, 400, "input"),
    ({"model": "minilm", "input": "word " * 300}, 400, "embeds at most 256 tokens"),
    ({"model": "minilm", "input": "hi", "dimensions": 128}, 400,
     "gives 384-dimensional embeddings and cannot shorten them"),
    ({"model": "minilm", "input": "hi", "encoding_format": "int8"}, 400, "encoding_format"),
    ({"model": "minilm", "input": [[101, 99999999]]}, 400, "token ids are integers in [0, 30522)"),
    ({"model": "smollm2", "input": "hi"}, 400, "generates text and declares no pooling"),
    ({"model": "nope", "input": "hi"}, 404, "nope"),
])
def test_bad_input_is_a_clear_error(server, body, status, message):
    response = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]["message"]


def test_the_limit_error_reaches_the_openai_client(client):
    with pytest.raises(openai.BadRequestError, match="embeds at most 256 tokens"):
        client.embeddings.create(model="minilm", input=["fine", "word " * 300])


def test_an_embedding_model_asked_for_a_completion_is_a_400(client):
    with pytest.raises(openai.BadRequestError, match="is an embedding model"):
        client.completions.create(model="minilm", prompt="Hello", max_tokens=3)


def test_the_server_serves_on_after_bad_input(client, sdk_vectors):
    answer = client.embeddings.create(model="minilm", input=TEXTS, encoding_format="float")
    assert close(answer.data[2].embedding, sdk_vectors[2])
