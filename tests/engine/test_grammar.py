"""Structured output in the engine: response formats compiled (or refused, naming the problem)
on construction, and constrained sequences batched with free ones on the real default model
(fp32) through chunked prefill, prefix caching and preemption, each getting what it asked."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from mcp.base.errors import InvalidRequestError
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.grammar import (
    GrammarState,
    ResponseFormat,
    json_schemas_format,
    response_format_of,
)
from mcp.engine.handle import RequestOptions
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig

KV_BYTES = 256 * 16 * 46080
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


def _chat_ids(engine, text: str) -> list[int]:
    rendered = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return engine.tokenizer.encode(rendered, add_special_tokens=False)


@pytest.mark.parametrize(("given", "problem"), [
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}}, "/nowhere"),
    ({"type": "json_schema", "json_schema": {"name": "x"}}, "json_schema.schema"),
    ({"type": "regex", "regex": "a(b"}, "cannot be compiled"),
    ({"type": "grammar", "grammar": "start: undefined_rule"}, "undefined_rule"),
    ({"type": "grammar", "grammar": "root ::= missing"}, "GBNF: Rule 'missing' not found"),
    ({"type": "yaml"}, "'yaml' is unknown"),
    ({"type": "regex"}, "needs its pattern"),
    ("json", "an object with a type"),
])
def test_a_format_the_engine_cannot_compile_is_refused_naming_the_problem(given, problem):
    with pytest.raises(InvalidRequestError, match=re.escape(problem)):
        SamplingParams.from_user(response_format=given)


def test_strict_refuses_a_keyword_the_engine_does_not_implement_and_lenient_ignores_it():
    schema = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    ResponseFormat.json_schema(schema, strict=False)
    with pytest.raises(InvalidRequestError, match="Unimplemented keys: \\[\"uniqueItems\"\\]"):
        ResponseFormat.json_schema(schema, strict=True)


def test_the_mask_leaves_only_what_the_grammar_allows(fp32_engine):
    tokenizer = fp32_engine.tokenizer
    state = GrammarState(response_format_of({"type": "regex", "regex": "(yes|no)"}), tokenizer)
    logits = np.zeros(fp32_engine.model.arch.vocab_size, dtype=np.float32)
    allowed = np.flatnonzero(state.mask(logits) == 0)
    assert {tokenizer.decode([t]) for t in allowed} <= {"y", "ye", "yes", "n", "no"}
    assert tokenizer.encode("yes", add_special_tokens=False)[0] in allowed
    state.consume(tokenizer.encode("yes", add_special_tokens=False)[0])
    assert state.done
    gbnf = GrammarState(response_format_of({"type": "grammar", "grammar": 'root ::= "no"'}), tokenizer)
    assert tokenizer.encode("no", add_special_tokens=False)[0] in np.flatnonzero(gbnf.mask(np.zeros(len(logits))) == 0)


def test_constrained_and_free_sequences_share_batches_and_each_gets_what_it_asked(fp32_engine):
    engine = fp32_engine
    # 8 tokens a step: prompts are prefilled in chunks, while the others decode
    config = LoopConfig(scheduler=SchedulerConfig(max_num_batched_tokens=8), kv_cache_bytes=KV_BYTES)
    loop = EngineLoop(engine, config)
    try:
        free = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)
        person = SamplingParams(max_tokens=60, temperature=0.0, response_format=ResponseFormat.json_schema(PERSON))
        phone = SamplingParams(max_tokens=20, temperature=0.7, seed=1,
                               response_format=response_format_of({"type": "regex", "regex": r"[0-9]{3}-[0-9]{4}"}))
        asks = [(_chat_ids(engine, "Name three colors."), free),
                (_chat_ids(engine, "Give me a person as JSON with name and age."), person),
                (engine.tokenizer.encode("The capital of France is"), free),
                (_chat_ids(engine, "What is your phone number?"), phone),
                (_chat_ids(engine, "Give me a person as JSON with name and age."), person)]  # a cached prefix
        handles = [loop.submit(ids, params) for ids, params in asks]
        texts = ["".join(step.text for step in handle) for handle in handles]
        for index in (0, 2):
            ids, params = asks[index]
            expected = [step.token_id for step in contiguous_decoder(engine).generate(ids, params)]
            assert [step.token_id for step in handles[index].outputs] == expected  # the free ones: as if alone
        for index in (1, 4):
            data = json.loads(texts[index])
            assert set(data) == {"name", "age"} and isinstance(data["age"], int) and len(data["name"]) <= 20
            assert handles[index].outcome.finish_reason == "stop"
        assert texts[1] == texts[4] and handles[4].outcome.num_cached_tokens > 0
        assert re.fullmatch(r"[0-9]{3}-[0-9]{4}", texts[3]) and handles[3].outcome.finish_reason == "stop"
        assert loop.stats().num_steps < sum(len(ids) // 8 + p.max_tokens for ids, p in asks)  # batched
    finally:
        loop.close()


def test_a_preempted_constrained_sequence_keeps_its_grammar_state(fp32_engine):
    engine = fp32_engine
    loop = EngineLoop(engine, LoopConfig(scheduler=SchedulerConfig(max_num_seqs=1), kv_cache_bytes=KV_BYTES))
    try:
        fmt = response_format_of({"type": "regex", "regex": "(ab|cd){8}"})
        low = loop.submit(_chat_ids(engine, "Write letters."), SamplingParams(max_tokens=40, response_format=fmt,
                                                                             seed=3), RequestOptions(slo_class="low"))
        next(low)
        critical = loop.submit(engine.tokenizer.encode("Hello"), SamplingParams(max_tokens=4, temperature=0.0),
                               RequestOptions(slo_class="critical"))
        critical.wait()
        low.wait()
        text = "".join(step.text for step in low.outputs)
        assert low.outcome.num_preemptions >= 1
        assert re.fullmatch("(ab|cd){8}", text) and low.outcome.finish_reason == "stop"
    finally:
        loop.close()


def test_tool_call_grammar_wraps_one_of_several_schemas(fp32_engine):
    tools = [{"type": "object", "properties": {"name": {"const": "get_weather"},
                                               "arguments": {"type": "object", "properties": {
                                                   "city": {"type": "string", "maxLength": 16}},
                                                   "required": ["city"], "additionalProperties": False}},
              "required": ["name", "arguments"], "additionalProperties": False},
             {"type": "object", "properties": {"name": {"const": "get_time"}, "arguments": {"type": "object",
                                                                                           "maxProperties": 0}},
              "required": ["name", "arguments"], "additionalProperties": False}]
    fmt = json_schemas_format(tools, prefix="<tool_call>\n", suffix="\n</tool_call>")
    loop = EngineLoop(fp32_engine, LoopConfig(kv_cache_bytes=KV_BYTES))
    try:
        handle = loop.submit(_chat_ids(fp32_engine, "What is the weather in Paris?"),
                             SamplingParams(max_tokens=60, temperature=0.0, response_format=fmt))
        text = "".join(step.text for step in handle)
    finally:
        loop.close()
    assert text.startswith("<tool_call>\n") and text.endswith("\n</tool_call>")
    call = json.loads(text.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
    assert call["name"] in ("get_weather", "get_time")
    with pytest.raises(InvalidRequestError, match="at least one schema"):
        json_schemas_format([])


def test_the_lean_decoder_takes_a_response_format_too(smollm2_auto_mcp):
    from mcp.engine.lean import LeanModel

    model = LeanModel(str(smollm2_auto_mcp), num_threads=1)
    result = model.chat([{"role": "user", "content": "Give me a person as JSON with name and age."}],
                        max_tokens=60, temperature=0.0,
                        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}})
    person = json.loads(result.text)
    assert set(person) == {"name", "age"} and result.finish_reason == "stop"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_sampling_filter_keeps_to_the_grammar(fp32_engine, seed):
    fmt = response_format_of({"type": "regex", "regex": "(red|green|blue)(, (red|green|blue)){2}"})
    params = SamplingParams(max_tokens=30, temperature=1.5, top_k=40, top_p=0.9, min_p=0.01, repetition_penalty=1.5,
                            presence_penalty=1.0, frequency_penalty=1.0, seed=seed, logprobs=2, response_format=fmt)
    steps = list(contiguous_decoder(fp32_engine).generate(_chat_ids(fp32_engine, "Name three colors."), params))
    assert re.fullmatch("(red|green|blue)(, (red|green|blue)){2}", "".join(step.text for step in steps))
    assert steps[-1].finish_reason == "stop" and all(step.logprob is not None for step in steps)
