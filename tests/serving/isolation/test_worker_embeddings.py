"""An embedding model served in its sandboxed worker (``serving.isolation: worker``, the default on
Linux): the openai client gets the vectors the SDK computes in process, a refusal made in the worker
(an input past the limit, a completion asked of it) comes back as the same 400, and the server's
metrics count the requests, which ran in the worker."""

from __future__ import annotations

import httpx
import openai
import pytest

from mcp.config.runtime import config_from_dict
from mcp.runtime.session import Session

TEXTS = ["The capital of France is Paris.", "北京是中国的首都", "def add(a, b): return a + b"]


@pytest.fixture(scope="module")
def server(start_server, minilm_mcp):
    return start_server({"runtime": {"device": "cpu", "num_threads": 1},
                         "serving": {"isolation": "worker", "models": [{"name": "minilm", "source": str(minilm_mcp)}]}})


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_vectors_from_the_worker_equal_the_sdks(client, minilm_mcp):
    with Session(config_from_dict({"runtime": {"device": "cpu", "num_threads": 1}})) as session:
        expected = session.load_model(str(minilm_mcp)).embed(TEXTS).embeddings
    answer = client.embeddings.create(model="minilm", input=TEXTS, encoding_format="float")
    for got, want in zip(answer.data, expected):
        assert len(got.embedding) == 384 and max(abs(a - b) for a, b in zip(got.embedding, want)) < 1e-6
    assert answer.usage.prompt_tokens > len(TEXTS)


def test_refusals_made_in_the_worker_are_400s(client):
    with pytest.raises(openai.BadRequestError, match="embeds at most 256 tokens"):
        client.embeddings.create(model="minilm", input="word " * 300)
    with pytest.raises(openai.BadRequestError, match="is an embedding model"):
        client.completions.create(model="minilm", prompt="Hello", max_tokens=2)
    assert client.embeddings.create(model="minilm", input="still serving").data


def prompt_tokens_counted(server) -> float:
    lines = [line for line in httpx.get(server.url + "/metrics").text.splitlines()
             if line.startswith("mcp_prompt_tokens_total{") and 'model="minilm"' in line and 'slo_class="medium"' in line]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def test_metrics_count_the_embeddings(server, client):
    before = prompt_tokens_counted(server)
    answer = client.embeddings.create(model="minilm", input=["one", "two"])
    assert prompt_tokens_counted(server) - before == answer.usage.prompt_tokens == 6  # [CLS] one [SEP], twice
