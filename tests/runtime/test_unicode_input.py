"""A lone surrogate in SDK input is the project's InvalidRequestError naming the argument, not
the tokenizer library's TypeError (issue 28, finding 3)."""

from __future__ import annotations

import pytest

from mcp.config.runtime import RuntimeConfig
from mcp.runtime import InvalidRequestError, Session


@pytest.fixture(scope="module")
def model(tiny_mcp):
    with Session(RuntimeConfig(device="cpu", num_threads=1)) as session:
        yield session.load_model(str(tiny_mcp))


@pytest.mark.parametrize("call, where", [
    (lambda m: m.infer("\ud800", max_tokens=1), "prompt has a lone surrogate (U+D800) at character 0"),
    (lambda m: m.infer("ok", max_tokens=1, system="\udfff"), "system has a lone surrogate (U+DFFF)"),
    (lambda m: list(m.stream("ab\udc00", max_tokens=1)), "prompt has a lone surrogate (U+DC00) at character 2"),
    (lambda m: m.infer_batch(["fine", "x\ud800"], max_tokens=1), "prompts[1] has a lone surrogate"),
    (lambda m: m.chat([{"role": "user", "content": "\ud83d"}], max_tokens=1), "messages[0].content has a lone"),
    (lambda m: m.tokenize("\ud800"), "text has a lone surrogate"),
    (lambda m: m.engine.tokenizer.encode("a\ud800"), "text has a lone surrogate (U+D800) at character 1"),
])
def test_a_lone_surrogate_is_an_invalid_request_naming_the_argument(model, call, where):
    with pytest.raises(InvalidRequestError, match=r"valid Unicode") as raised:
        call(model)
    assert where in str(raised.value)
    assert model.infer("\U0001f600 fine", max_tokens=1).finish_reason in ("stop", "length")  # a real pair is fine
