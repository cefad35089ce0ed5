"""``model.embed`` on the real all-MiniLM-L6-v2: vectors as the engine pools them, inputs batched
within the scheduler's limits, and every bad call a clear error that names what was wrong."""

from __future__ import annotations

import math

import pytest

from mcp.base.errors import ContextLengthError, InvalidRequestError
from mcp.config.runtime import config_from_dict
from mcp.runtime.session import Session


def session_with(**scheduler) -> Session:
    return Session(config_from_dict({"runtime": {"device": "cpu", "num_threads": 1}, "scheduler": scheduler}))


@pytest.fixture(scope="module")
def minilm(minilm_mcp):
    with session_with() as session:
        yield session.load_model(str(minilm_mcp))


def test_embed_gives_one_unit_vector_per_text_with_its_tokens(minilm):
    result = minilm.embed(["The capital of France is Paris.", "今天天气很好"])
    assert len(result.embeddings) == 2 and all(len(v) == 384 for v in result.embeddings)
    assert all(math.isclose(math.hypot(*v), 1.0, rel_tol=1e-5) for v in result.embeddings)
    expected = [len(minilm.tokenize(t)) for t in ("The capital of France is Paris.", "今天天气很好")]
    assert list(result.num_tokens) == expected and result.usage.prompt_tokens == sum(expected)
    assert minilm.tokenize("hi")[0] == 101 and minilm.tokenize("hi")[-1] == 102  # [CLS] ... [SEP]


def test_a_string_is_one_input_and_equals_its_list_form(minilm):
    single, listed = minilm.embed("a dog runs"), minilm.embed(["a dog runs", "a cat sleeps"])
    assert len(single.embeddings) == 1
    assert max(abs(a - b) for a, b in zip(single.embeddings[0], listed.embeddings[0])) < 1e-5


def test_similar_texts_are_closer_than_unrelated_ones(minilm):
    a, b, c = minilm.embed(["A man is eating food.", "A man is eating a meal.", "The stock market fell today."]).embeddings
    dot = lambda x, y: sum(p * q for p, q in zip(x, y))  # noqa: E731
    assert dot(a, b) > 0.8 > 0.3 > dot(a, c)


def test_inputs_run_in_steps_of_at_most_max_num_seqs(minilm_mcp):
    with session_with(max_num_seqs=2) as session:
        model = session.load_model(str(minilm_mcp))
        model.embed([f"sentence {i}" for i in range(5)])
        stats = model.loop.stats()
    assert (stats.num_steps, stats.max_sequences_in_step) == (3, 2)


def test_one_request_of_many_inputs_is_one_step(minilm_mcp):
    with session_with() as session:
        model = session.load_model(str(minilm_mcp))
        model.embed([f"sentence {i}" for i in range(7)])
        stats = model.loop.stats()
    assert (stats.num_steps, stats.max_sequences_in_step) == (1, 7)


def test_an_input_past_the_limit_names_the_limit(minilm):
    with pytest.raises(ContextLengthError, match=r"input 1 has 302 tokens .* embeds at most 256 tokens"):
        minilm.embed(["short", "word " * 300])


@pytest.mark.parametrize(("texts", "message"), [
    ([], "texts is empty"),
    (["fine", 3], r"texts\[1\] must be a string"),
    ([""], r"texts\[0\] is empty"),
])
def test_bad_texts_are_named(minilm, texts, message):
    with pytest.raises(InvalidRequestError, match=message):
        minilm.embed(texts)


def test_an_embedding_model_cannot_generate(minilm):
    with pytest.raises(InvalidRequestError, match="is an embedding model .* cannot generate text"):
        minilm.infer("Hello", raw=True, max_tokens=3)


def test_a_decoder_cannot_embed(smollm2_auto_mcp):
    with session_with() as session:
        model = session.load_model(str(smollm2_auto_mcp))
        with pytest.raises(InvalidRequestError, match="generates text and declares no pooling, so it cannot embed"):
            model.embed("Hello")
        assert not model.embeds


def test_the_encoder_loop_is_a_request_loop_and_unload_closes_it(minilm_mcp):
    from mcp.engine.contracts import RequestLoop
    from mcp.engine.embedding_loop import EmbeddingLoop

    with session_with() as session:
        model = session.load_model(str(minilm_mcp))
        loop = model.loop
        assert isinstance(loop, EmbeddingLoop) and isinstance(loop, RequestLoop)
        assert loop.max_context == model.max_context == 256
        model.unload()
        assert loop.closed
        with pytest.raises(InvalidRequestError, match="has been unloaded; load it again"):
            model.embed("hello")
