"""The runtime tokenizer on the real SmolLM2 vocabulary, with transformers as the oracle."""

from __future__ import annotations

import dataclasses
import random
import sys
from datetime import datetime

import gguf
import pytest

from mcp.base.errors import InvalidRequestError, ModelFormatError
from mcp.compiler.gguf_tokenizer import tokenizer_spec_from_gguf
from mcp.engine.tokenizer import Tokenizer

import transformers  # noqa: E402  (test extra: pip install -e ".[test]")

TEXTS = [
    "Hello world",
    "中文分词测试：你好，世界！ 日本語のテキストです。",
    "emoji 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 flags 🇫🇷🇯🇵",
    "def main():\n\tfor i in range(10):\n\t\tprint(i)\n",
    "spaces     inside\n\n\n\nand 12345678901234567890   ",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nSure<|endoftext|>",
    "café naïve résumé Ångström",
    "Hello , world . ( spaced ) don 't",
    "",
]
CONVERSATIONS = [
    [{"role": "user", "content": "What is 2 + 2?"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}],
    [
        {"role": "user", "content": "Name a color."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another, in 中文 please 🎨"},
    ],
]


@pytest.fixture(scope="module")
def smollm2_spec(smollm2_gguf):
    return tokenizer_spec_from_gguf(gguf.GGUFReader(str(smollm2_gguf)))


@pytest.fixture(scope="module")
def smollm2_tokenizer(smollm2_spec) -> Tokenizer:
    return Tokenizer.from_spec(smollm2_spec)


@pytest.fixture(scope="module")
def smollm2_hf(smollm2_gguf):
    return transformers.AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name)


def _with_template(spec, template: str) -> Tokenizer:
    return Tokenizer.from_spec(dataclasses.replace(spec, chat_template=template))


def test_attributes(smollm2_tokenizer):
    assert smollm2_tokenizer.vocab_size == 49152
    assert smollm2_tokenizer.bos_token_id == 1
    assert smollm2_tokenizer.eos_token_ids == (2,)


def test_bos_and_eos_follow_the_spec_flags(smollm2_spec):
    plain = Tokenizer.from_spec(smollm2_spec)
    assert plain.encode("Hello") == plain.encode("Hello", add_special_tokens=False) == [19556]
    both = Tokenizer.from_spec(dataclasses.replace(smollm2_spec, add_bos_token=True, add_eos_token=True))
    assert both.encode("Hello") == [1, 19556, 2]
    assert both.encode("Hello", add_special_tokens=False) == [19556]
    assert both.encode("") == [1, 2]


def test_loads_of_one_spec_share_a_tokenizer_that_keeps_no_json(smollm2_spec):
    json_text = "".join(smollm2_spec.tokenizer_json)  # a str of its own, referenced only here
    spec = dataclasses.replace(smollm2_spec, tokenizer_json=json_text)
    references = sys.getrefcount(json_text)
    first = Tokenizer.from_spec(spec)
    assert Tokenizer.from_spec(dataclasses.replace(smollm2_spec)) is first  # a hot swap's reload
    assert Tokenizer.from_spec(dataclasses.replace(smollm2_spec, chat_template="{{ 1 }}")) is not first
    del spec
    assert sys.getrefcount(json_text) == references - 1  # neither the tokenizer nor its cache keeps it
    assert first.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True).startswith(
        "<|im_start|>")


def test_decode_matches_transformers(smollm2_tokenizer, smollm2_hf):
    for text in TEXTS:
        ids = smollm2_hf.encode(text)
        assert smollm2_tokenizer.decode(ids) == smollm2_hf.decode(ids) == text
        skipped = smollm2_hf.decode(ids, skip_special_tokens=True)
        assert smollm2_tokenizer.decode(ids, skip_special_tokens=True) == skipped
    assert smollm2_tokenizer.decode([1, 4093, 198, 26843, 2], skip_special_tokens=True) == "user\nHi"


def test_decode_of_random_ids_matches_transformers(smollm2_tokenizer, smollm2_hf):
    rng = random.Random(7)
    for _ in range(20):
        ids = [rng.randrange(49152) for _ in range(rng.randrange(1, 40))]
        assert smollm2_tokenizer.decode(ids) == smollm2_hf.decode(ids)


def _stream(tokenizer: Tokenizer, ids: list[int], skip_special_tokens: bool = True) -> list[str]:
    decoder = tokenizer.incremental_decoder(skip_special_tokens=skip_special_tokens)
    return [decoder.push(i) for i in ids] + [decoder.flush()]


def test_incremental_decoder_reproduces_decode(smollm2_tokenizer):
    for text in TEXTS:
        ids = smollm2_tokenizer.encode(text)
        pieces = _stream(smollm2_tokenizer, ids)
        assert "".join(pieces) == smollm2_tokenizer.decode(ids, skip_special_tokens=True), text
        assert not any("\ufffd" in piece for piece in pieces), text
        assert "".join(_stream(smollm2_tokenizer, ids, skip_special_tokens=False)) == text


def test_incremental_decoder_holds_partial_characters(smollm2_tokenizer, smollm2_hf):
    ids = smollm2_tokenizer.encode("👨‍👩‍👧")
    assert len(ids) > 3  # byte-level pieces that cut characters
    pieces = _stream(smollm2_tokenizer, ids)
    assert "".join(pieces) == "👨‍👩‍👧"
    assert [p for p in pieces if p] == ["👨", "\u200d", "👩", "\u200d", "👧"]
    lone = _stream(smollm2_tokenizer, ids[:1])  # a stream cut inside a character
    assert lone == ["", smollm2_hf.decode(ids[:1])] and lone[1].endswith("\ufffd")


def test_incremental_decoder_on_random_ids(smollm2_tokenizer):
    rng = random.Random(11)
    for _ in range(20):
        ids = [rng.randrange(49152) for _ in range(rng.randrange(1, 60))]
        for skip in (True, False):
            streamed = "".join(_stream(smollm2_tokenizer, ids, skip))
            assert streamed == smollm2_tokenizer.decode(ids, skip_special_tokens=skip)


@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_chat_template_matches_transformers(smollm2_tokenizer, smollm2_hf, add_generation_prompt):
    for messages in CONVERSATIONS:
        ours = smollm2_tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt)
        theirs = smollm2_hf.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )
        assert ours == theirs
    first = smollm2_tokenizer.apply_chat_template(CONVERSATIONS[0])
    assert first == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    )


FEATURE_TEMPLATE = """
{%- set ns = namespace(count=0) -%}
{{ bos_token }}
{% for message in messages %}
  {% if message['role'] == 'skip' %}{% continue %}{% endif %}
  {% set ns.count = ns.count + 1 %}
  {{ message['role'] }}: {{ message['content'] | tojson }}
  {% generation %}[{{ ns.count }}]{% endgeneration %}
  {% if ns.count >= 3 %}{% break %}{% endif %}
{% endfor %}
{{ {'tools': tools, 'unicode': 'é中'} | tojson(indent=2, sort_keys=True) }}
{{ extra_variable | default('none') }}{{ eos_token }}
{% if add_generation_prompt %}assistant:{% endif %}
"""


def test_template_features_match_transformers(smollm2_spec, smollm2_hf):
    tokenizer = _with_template(smollm2_spec, FEATURE_TEMPLATE)
    messages = [
        {"role": "user", "content": 'say "hi" in 中文'},
        {"role": "skip", "content": "x"},
        {"role": "assistant", "content": "你好"},
        {"role": "user", "content": "3"},
        {"role": "user", "content": "never shown"},
    ]
    for kwargs in ({}, {"extra_variable": "given"}):
        ours = tokenizer.apply_chat_template(messages, add_generation_prompt=True, **kwargs)
        theirs = smollm2_hf.apply_chat_template(
            messages, chat_template=FEATURE_TEMPLATE, tokenize=False, add_generation_prompt=True, **kwargs
        )
        assert ours == theirs
    assert '"你好"' in ours and "never shown" not in ours and "given" in ours


def test_template_raise_exception_is_an_invalid_request(smollm2_spec):
    template = (
        "{% if messages[0]['role'] != 'user' %}"
        "{{ raise_exception('Conversation must start with user') }}{% endif %}ok"
    )
    tokenizer = _with_template(smollm2_spec, template)
    assert tokenizer.apply_chat_template([{"role": "user", "content": "a"}]) == "ok"
    with pytest.raises(InvalidRequestError, match="rejected these messages: Conversation must start with user"):
        tokenizer.apply_chat_template([{"role": "assistant", "content": "a"}])


def test_template_strftime_now(smollm2_spec):
    tokenizer = _with_template(smollm2_spec, "{{ strftime_now('%Y-%m') }}")
    assert tokenizer.apply_chat_template([{"role": "user", "content": "a"}]) == datetime.now().strftime("%Y-%m")


def test_template_runtime_error_is_an_invalid_request(smollm2_spec):
    tokenizer = _with_template(smollm2_spec, "{{ messages[0]['content'] + 1 }}")
    with pytest.raises(InvalidRequestError, match="chat template could not format these messages"):
        tokenizer.apply_chat_template([{"role": "user", "content": "a"}])


def test_no_chat_template(smollm2_spec):
    tokenizer = Tokenizer.from_spec(dataclasses.replace(smollm2_spec, chat_template=None))
    with pytest.raises(InvalidRequestError, match="has no chat template.*send a raw prompt"):
        tokenizer.apply_chat_template([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ("hello", r"messages must be a list of .* got str"),
        ([], r"messages is empty"),
        (["hi"], r"messages\[0\] must be an object with 'role' and 'content', got str"),
        ([{"content": "hi"}], r"messages\[0\] has no 'role'; every message needs a string 'role' and 'content'"),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": 5}],
            r"messages\[1\]\.content must be a string, got int",
        ),
    ],
)
def test_bad_messages_are_invalid_requests(smollm2_tokenizer, messages, problem):
    with pytest.raises(InvalidRequestError, match=problem):
        smollm2_tokenizer.apply_chat_template(messages)


def test_encode_rejects_non_text(smollm2_tokenizer):
    with pytest.raises(InvalidRequestError, match="text to encode must be a string, got list"):
        smollm2_tokenizer.encode(["a"])


def test_decode_rejects_negative_ids(smollm2_tokenizer):
    with pytest.raises(InvalidRequestError, match="token ids must be non-negative integers"):
        smollm2_tokenizer.decode([5, -1])


def test_bad_spec_is_a_format_error(smollm2_spec):
    with pytest.raises(ModelFormatError, match="tokenizer cannot be loaded"):
        Tokenizer.from_spec(dataclasses.replace(smollm2_spec, tokenizer_json="{not json"))
    with pytest.raises(ModelFormatError, match=r"chat template is not valid Jinja \(line 1"):
        _with_template(smollm2_spec, "{% for m in messages %}")
