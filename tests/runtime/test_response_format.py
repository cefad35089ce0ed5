"""Structured output from the SDK: ``response_format=`` on infer, chat, streams and batches with
the default model (a pydantic model class, OpenAI's objects, our regex and grammar), free and
constrained requests served side by side, and a bad format refused before anything runs."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel, Field

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import RuntimeConfig
from mcp.runtime import Session

ASK_PERSON = [{"role": "user", "content": "Give me a person as JSON with name and age."}]


class Person(BaseModel):
    name: str = Field(max_length=24)
    age: int


@pytest.fixture(scope="module")
def model(smollm2_auto_mcp):
    with Session(RuntimeConfig(device="cpu")) as session:
        yield session.load_model(str(smollm2_auto_mcp))


def test_chat_with_a_pydantic_model_returns_json_that_validates(model):
    result = model.chat(ASK_PERSON, response_format=Person, max_tokens=60, temperature=0.0)
    assert Person.model_validate_json(result.text).name and result.finish_reason == "stop"
    result = model.infer("Describe a dog.", response_format={"type": "json_object"}, max_tokens=120, temperature=0.0)
    assert isinstance(json.loads(result.text), dict)


def test_streams_and_batches_mix_constrained_and_free_requests(model):
    free_alone = model.chat([{"role": "user", "content": "Name three colors."}], max_tokens=12, temperature=0.0)
    streams = [model.chat_stream(ASK_PERSON, response_format=Person, max_tokens=60, seed=7),
               model.chat_stream([{"role": "user", "content": "Name three colors."}], max_tokens=12, temperature=0.0),
               model.stream("Is water wet?", response_format={"type": "grammar", "grammar": 'start: "yes" | "no"'})]
    texts = ["".join(stream) for stream in streams]
    Person.model_validate_json(texts[0])
    assert texts[1] == free_alone.text and texts[2] in ("yes", "no")
    codes = model.infer_batch(["Code 1:", "Code 2:", "Code 3:"], max_tokens=10,
                              response_format={"type": "regex", "regex": "[A-Z]{2}[0-9]{2}"})
    assert all(re.fullmatch("[A-Z]{2}[0-9]{2}", r.text) and r.finish_reason == "stop" for r in codes)


def test_a_bad_format_is_refused_naming_the_problem(model):
    with pytest.raises(InvalidRequestError, match="unknown name"):
        model.infer("x", response_format={"type": "grammar", "grammar": "start: foo"})
    with pytest.raises(InvalidRequestError, match="an object with a type"):
        model.infer("x", response_format="json")
    assert model.loop.stats().num_running == 0
