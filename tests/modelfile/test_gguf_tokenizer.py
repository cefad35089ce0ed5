"""Tokenizers built from GGUF vocabularies (and from HF folders), checked against transformers.

Where transformers' GGUF loader departs from llama.cpp and from the model's own tokenizer,
the expected tokens follow llama.cpp, and the test says so:
- SmolLM2 ("smollm" pre-tokenizer) splits every digit off before the GPT-2 regex, so
  "x  1" is x|ĠĠ|1 (transformers: x|Ġ|Ġ|1).
- A sentencepiece vocabulary prepends "▁" to text that already starts with a space and to
  text after a special token (transformers' GGUF loader does neither, so " a" does not even
  decode back to " a" there). A real sentencepiece model confirms it when installed.
"""

from __future__ import annotations

import io
import json
import shutil
import textwrap
from pathlib import Path

import gguf
import pytest
import regex
from tokenizers import ByteLevelBPETokenizer, SentencePieceBPETokenizer

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.compiler.gguf_tokenizer import tokenizer_spec_from_gguf
from mcp.compiler.hf_tokenizer import tokenizer_spec_from_hf_folder
from mcp.engine.tokenizer import Tokenizer

import transformers  # noqa: E402  (test extra: pip install -e ".[test]")

SMOLLM2_CORPUS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog. It's 5 o'clock; they'll say \"no\"!",
    "中文分词测试：你好，世界！",
    "日本語のテキストです。カタカナとひらがな。",
    "emoji 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 flags 🇫🇷🇯🇵🇺🇸",
    "def main():\n\tfor i in range(10):\n\t\tprint(i)  # tab\n    return None\n",
    "    four leading spaces",
    "spaces     inside   and trailing   ",
    "\n\n\nnewlines\n\n\n\nrun\r\n\r\n",
    "digits 3.14159265358979 and 12345678901234567890, year 2024",
    "x  1 with  22 spaces before digits\t\t3",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more<|im_end|><|im_start|>",
    "café naïve résumé Ångström façade Zürich",
    "Ελληνικά и русский текст, עברית, العربية",
    "",
    " ",
    "\t",
    "a" * 300,
]
SPM_PLAIN_CORPUS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a  b   c    d",
    "tabs\tand\nnewlines\n\n",
    "trailing  ",
    "中文字符 and 日本語 (bytes)",
    "emoji 👨‍👩‍👧 🇫🇷 ok",
    "café naïve ÀÉÎÕÜ",
    "x = 12345678901234",
    "def forward(self, x):\n    return self.proj(x)  # comment",
    "Hi</s>",
    "",
]
SPM_SPACE_CORPUS = [
    " leading", "   three leading", " ", "  ", "\n after newline", "</s>Hello", "a<s> b</s>  c", "<s>",
]


def _write_gguf(path: Path, tokens: list[str], types: list[int], model: str = "gpt2", **fields) -> Path:
    """A GGUF with a tokenizer and the model metadata transformers needs to load it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), fields.pop("architecture", "llama"))
    for key, value in dict(context_length=64, embedding_length=8, block_count=1, feed_forward_length=16,
                           head_count=2, head_count_kv=2, layer_norm_rms_eps=1e-5).items():
        getattr(writer, f"add_{key}")(value)
    if model is not None:
        writer.add_tokenizer_model(model)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    for key, value in fields.items():
        getattr(writer, f"add_{key}")(value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _training_text() -> list[str]:
    """Real English prose and code that every Python install has."""
    return (Path(json.__file__).read_text() + Path(textwrap.__file__).read_text()).splitlines()


def _hf(path: Path):
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def _runtime(path: Path) -> Tokenizer:
    return Tokenizer.from_spec(tokenizer_spec_from_gguf(gguf.GGUFReader(str(path))))


# --- SmolLM2: byte-level BPE, "smollm" pre-tokenizer ------------------------------------


@pytest.fixture(scope="module")
def smollm2_hf(smollm2_gguf):
    return _hf(smollm2_gguf)


@pytest.fixture(scope="module")
def smollm2_spec(smollm2_gguf):
    return tokenizer_spec_from_gguf(gguf.GGUFReader(str(smollm2_gguf)))


def _digit_split_reference(hf, text: str) -> list[int]:
    """llama.cpp's smollm rule on transformers' BPE: cut every \\p{N} off first, then tokenize."""
    pieces = [piece for piece in regex.split(r"(\p{N})", text) if piece]
    return [i for piece in pieces for i in hf.encode(piece, add_special_tokens=False)]


def test_smollm2_spec_special_tokens_and_template(smollm2_spec, smollm2_hf):
    assert (smollm2_spec.bos_token, smollm2_spec.bos_token_id) == ("<|im_start|>", 1)
    assert (smollm2_spec.eos_token, smollm2_spec.eos_token_ids) == ("<|im_end|>", (2,))
    assert smollm2_spec.pad_token_id == 2
    assert (smollm2_spec.add_bos_token, smollm2_spec.add_eos_token) == (False, False)
    assert smollm2_spec.chat_template == smollm2_hf.chat_template
    assert smollm2_spec.chat_template.startswith("{% for message in messages %}")


def test_smollm2_encodes_like_transformers_with_llama_cpp_digit_split(smollm2_spec, smollm2_hf):
    tokenizer = Tokenizer.from_spec(smollm2_spec)
    for text in SMOLLM2_CORPUS:
        assert tokenizer.encode(text) == _digit_split_reference(smollm2_hf, text), text
        assert tokenizer.encode(text) == tokenizer.encode(text, add_special_tokens=False)  # add_bos_token = False


def test_smollm2_special_tokens_in_text_are_single_tokens(smollm2_spec, smollm2_hf):
    tokenizer = Tokenizer.from_spec(smollm2_spec)
    text = "<|im_start|>user\nHi<|im_end|>"
    assert tokenizer.encode(text) == smollm2_hf.encode(text) == [1, 4093, 198, 26843, 2]


def test_smollm2_whitespace_before_digits_follows_llama_cpp(smollm2_spec, smollm2_hf):
    tokenizer = Tokenizer.from_spec(smollm2_spec)
    ids = tokenizer.encode("x  1")
    assert smollm2_hf.convert_ids_to_tokens(ids) == ["x", "ĠĠ", "1"]
    assert tokenizer.decode(ids) == "x  1"


def test_smollm2_tokenizer_json_is_byte_level_with_digit_split(smollm2_spec):
    data = json.loads(smollm2_spec.tokenizer_json)
    assert data["model"]["type"] == "BPE" and len(data["model"]["vocab"]) == 49152
    assert len(data["model"]["merges"]) == 48900
    assert [step["type"] for step in data["pre_tokenizer"]["pretokenizers"]] == ["Digits", "ByteLevel"]
    assert data["decoder"]["type"] == "ByteLevel"
    special = [(t["id"], t["content"]) for t in data["added_tokens"] if t["special"]]
    assert special[:3] == [(0, "<|endoftext|>"), (1, "<|im_start|>"), (2, "<|im_end|>")] and len(special) == 17


# --- Other byte-level pre-tokenizers, on a BPE vocabulary trained here ---------------------


@pytest.fixture(scope="module")
def byte_level_vocab():
    trainer = ByteLevelBPETokenizer()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer.train_from_iterator(_training_text(), vocab_size=1200, special_tokens=specials, show_progress=False)
    model = json.loads(trainer.to_str())["model"]
    tokens = sorted(model["vocab"], key=model["vocab"].get)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, [3, 3, 3] + [1] * (len(tokens) - 3), merges


BYTE_LEVEL_CORPUS = [
    "Hello world, it's   12345 apples\n\n\t x",
    "I'M HERE, they'll go; WE'VE been",
    "中文 日本語 👨‍👩‍👧 🇫🇷",
    "a\r\n\r\nb  \n  c",
    "  lead",
    "trail   ",
    "<|im_start|>user\n42<|im_end|>",
]


@pytest.mark.parametrize("pre", ["gpt2", "default", "llama-bpe", "qwen2"])
def test_byte_level_pre_tokenizers_match_transformers(tmp_path, byte_level_vocab, pre):
    tokens, types, merges = byte_level_vocab
    path = _write_gguf(tmp_path / pre / "m.gguf", tokens, types, tokenizer_pre=pre, token_merges=merges,
                       bos_token_id=1, eos_token_id=2)
    ours, hf = _runtime(path), _hf(path)
    for text in BYTE_LEVEL_CORPUS + _training_text()[:200]:
        ids = ours.encode(text)
        assert ids == hf.encode(text, add_special_tokens=False), (pre, text)
        assert ours.decode(ids) == hf.decode(ids) == text


def test_unknown_pre_tokenizer_is_unsupported(tmp_path, byte_level_vocab):
    tokens, types, merges = byte_level_vocab
    path = _write_gguf(tmp_path / "m.gguf", tokens, types, tokenizer_pre="weird-bpe", token_merges=merges)
    with pytest.raises(UnsupportedModelError, match=r"pre-tokenizer 'weird-bpe' is not supported"):
        tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))


# --- SentencePiece BPE ("llama" vocabularies) ----------------------------------------------


def _spm_fields(scores: list[float]) -> dict:
    return dict(token_scores=scores, bos_token_id=1, eos_token_id=2, unk_token_id=0)


@pytest.fixture(scope="module")
def spm_gguf(tmp_path_factory) -> Path:
    """A Llama-style vocabulary: <unk> <s> </s>, 256 byte tokens, ▁-prefixed pieces by score."""
    trainer = SentencePieceBPETokenizer(add_prefix_space=True)
    trainer.train_from_iterator(_training_text(), vocab_size=700, limit_alphabet=90, show_progress=False)
    vocab = json.loads(trainer.to_str())["model"]["vocab"]
    pieces = sorted(vocab, key=vocab.get)
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces, "<tool>"]
    types = [2, 3, 3, *[6] * 256, *[1] * len(pieces), 4]
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))] + [0.0]
    folder = tmp_path_factory.mktemp("spm")
    return _write_gguf(folder / "spm.gguf", tokens, types, model="llama", **_spm_fields(scores))


@pytest.fixture(scope="module")
def spm_pair(spm_gguf):
    return _runtime(spm_gguf), _hf(spm_gguf)


def test_spm_spec_defaults_to_llama_cpp_bos(spm_gguf):
    spec = tokenizer_spec_from_gguf(gguf.GGUFReader(str(spm_gguf)))
    assert (spec.bos_token, spec.bos_token_id, spec.eos_token, spec.eos_token_ids) == ("<s>", 1, "</s>", (2,))
    assert (spec.add_bos_token, spec.add_eos_token) == (True, False)  # no add_bos_token key: llama.cpp adds BOS


def test_spm_plain_text_matches_transformers(spm_pair):
    ours, hf = spm_pair
    for text in SPM_PLAIN_CORPUS:
        ids = ours.encode(text)
        assert ids == hf.encode(text), text
        assert ours.encode(text, add_special_tokens=False) == hf.encode(text, add_special_tokens=False)
        assert ours.decode(ids) == hf.decode(ids)
        skipped = hf.decode(ids, skip_special_tokens=True)
        assert ours.decode(ids, skip_special_tokens=True) == skipped == text.replace("</s>", "")


def _sentencepiece_form(text: str) -> str:
    """The text with "▁" written where sentencepiece/llama.cpp prepend it: at the start and
    after every special token (transformers' GGUF loader then adds no second one)."""
    parts = regex.split(r"(<s>|</s>)", text)
    return "".join(p if p in ("<s>", "</s>") or not p else "\u2581" + p for p in parts)


def test_spm_prefix_space_follows_sentencepiece(spm_pair):
    ours, hf = spm_pair
    for text in SPM_SPACE_CORPUS:
        expected = hf.encode(_sentencepiece_form(text), add_special_tokens=False)
        assert ours.encode(text, add_special_tokens=False) == expected, text
    ids = ours.encode(" leading", add_special_tokens=False)
    assert hf.convert_ids_to_tokens(ids)[:1] == ["\u2581"]
    for text in (" leading", "   three leading", " ", "\n after newline"):
        assert ours.decode(ours.encode(text)) == "<s> " + text  # the stripped prefix space is BOS's
        assert ours.decode(ours.encode(text), skip_special_tokens=True) == text
    assert ours.decode(ours.encode("</s>Hello", add_special_tokens=False)) == "</s> Hello"


def test_spm_byte_fallback_and_user_defined_tokens(spm_pair):
    ours, hf = spm_pair
    ids = ours.encode("中<tool>x", add_special_tokens=False)
    assert hf.convert_ids_to_tokens(ids)[:4] == ["\u2581", "<0xE4>", "<0xB8>", "<0xAD>"]
    assert "<tool>" in hf.convert_ids_to_tokens(ids)
    assert ours.decode(ids, skip_special_tokens=True) == "中<tool> x"  # user-defined tokens are not special


def test_spm_incremental_decoding_reproduces_decode(spm_pair):
    ours, _ = spm_pair
    for text in SPM_PLAIN_CORPUS + SPM_SPACE_CORPUS:
        ids = ours.encode(text)
        decoder = ours.incremental_decoder()
        pieces = [decoder.push(i) for i in ids]
        assert "".join(pieces) + decoder.flush() == ours.decode(ids, skip_special_tokens=True), text
        assert not any("\ufffd" in piece for piece in pieces), text


def test_spm_without_space_prefix(tmp_path, spm_gguf):
    reader = gguf.GGUFReader(str(spm_gguf))
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    scores = reader.fields["tokenizer.ggml.scores"].contents()
    path = _write_gguf(tmp_path / "m.gguf", tokens, types, model="llama", add_space_prefix=False,
                       **_spm_fields(scores))
    ours = _runtime(path)
    ids = ours.encode("hi there", add_special_tokens=False)
    assert tokens[ids[0]][0] != "\u2581" and ours.decode(ids) == "hi there"


def test_spm_matches_real_sentencepiece(tmp_path):
    import sentencepiece as spm  # test extra
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_training_text()), model_writer=model, model_type="bpe", vocab_size=1500,
        byte_fallback=True, remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
        normalization_rule_name="identity", minloglevel=2,
    )
    processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
    size = processor.get_piece_size()
    tokens = [processor.id_to_piece(i) for i in range(size)]
    scores = [processor.get_score(i) for i in range(size)]
    types = [2 if processor.is_unknown(i) else 3 if processor.is_control(i) else 6 if processor.is_byte(i) else 1
             for i in range(size)]
    ours = _runtime(_write_gguf(tmp_path / "m.gguf", tokens, types, model="llama", **_spm_fields(scores)))
    for text in SPM_PLAIN_CORPUS[:-2] + SPM_SPACE_CORPUS[:5] + _training_text()[:300]:
        assert ours.encode(text, add_special_tokens=False) == processor.encode(text), text
        assert ours.decode(processor.encode(text)) == processor.decode(processor.encode(text))


# --- Files we refuse -------------------------------------------------------------------------


def test_bert_vocabulary_is_unsupported(tmp_path):
    path = _write_gguf(tmp_path / "bert.gguf", ["[PAD]", "[UNK]", "hello", "##lo"], [3, 2, 1, 1], model="bert",
                       architecture="bert")
    with pytest.raises(UnsupportedModelError, match=r"tokenizer model 'bert' is not supported"):
        tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))


def test_gemma2_sentencepiece_is_unsupported(tmp_path):
    path = _write_gguf(tmp_path / "g.gguf", ["<unk>", "<s>", "</s>", "a"], [2, 3, 3, 1], model="llama",
                       architecture="gemma2", token_scores=[0.0] * 4)
    with pytest.raises(UnsupportedModelError, match=r"vocabulary of a 'gemma2' GGUF is not supported"):
        tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))


def test_gemma3_vocabulary_without_a_bos_token_is_a_format_error(tmp_path):
    path = _write_gguf(tmp_path / "g.gguf", ["<unk>", "<s>", "</s>", "a"], [2, 3, 3, 1], model="llama",
                       architecture="gemma3", token_scores=[0.0] * 4)
    with pytest.raises(ModelFormatError, match=r"the Gemma vocabulary has no <bos> or <eos> token"):
        tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))


def test_gemma3_vocabulary_spells_space_runs_and_names_its_special_tokens(tmp_path):
    from tokenizers import Tokenizer

    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<end_of_turn>", "  ", "a", "b", "ab", "\u2581", "\u2581a"]
    types = [3, 3, 3, 2, 3, 4, 1, 1, 1, 1, 1]
    path = _write_gguf(tmp_path / "g.gguf", tokens, types, model="llama", architecture="gemma3",
                       token_scores=[0.0] * len(tokens), bos_token_id=1, eos_token_id=1)  # one id for all, as some files do
    spec = tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))
    assert (spec.bos_token_id, spec.eos_token_ids, spec.pad_token_id, spec.add_bos_token) == (2, (1, 4), 0, True)
    tokenizer = Tokenizer.from_str(spec.tokenizer_json)
    assert tokenizer.encode("ab  a", add_special_tokens=False).ids == [8, 5, 6]  # no prefix space; "  " is ▁▁
    assert "<start_of_turn>" in spec.chat_template


def test_gguf_without_tokenizer_is_a_format_error(tmp_path):
    path = _write_gguf(tmp_path / "none.gguf", ["a"], [1], model=None)
    with pytest.raises(ModelFormatError, match=r"has no tokenizer \(tokenizer.ggml.model is missing\)"):
        tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))


def test_special_token_id_outside_vocabulary_is_a_format_error(tmp_path, byte_level_vocab):
    tokens, types, merges = byte_level_vocab
    path = _write_gguf(tmp_path / "m.gguf", tokens, types, tokenizer_pre="gpt2", token_merges=merges,
                       eos_token_id=len(tokens))
    with pytest.raises(ModelFormatError, match=rf"eos_token_id = {len(tokens)} is outside the vocabulary"):
        tokenizer_spec_from_gguf(gguf.GGUFReader(str(path)))


# --- Hugging Face folders --------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_hf_folder(tmp_path_factory, smollm2_hf) -> Path:
    folder = tmp_path_factory.mktemp("smollm2-hf")
    smollm2_hf.save_pretrained(str(folder))
    return folder


def test_hf_folder_encodes_like_the_saved_tokenizer(smollm2_hf_folder, smollm2_hf, smollm2_spec):
    spec = tokenizer_spec_from_hf_folder(smollm2_hf_folder)
    tokenizer = Tokenizer.from_spec(spec)
    for text in SMOLLM2_CORPUS:
        assert tokenizer.encode(text) == smollm2_hf.encode(text), text
    assert spec.chat_template == smollm2_spec.chat_template
    fields = ("bos_token", "bos_token_id", "eos_token", "eos_token_ids", "pad_token_id",
              "add_bos_token", "add_eos_token")
    assert [getattr(spec, f) for f in fields] == [getattr(smollm2_spec, f) for f in fields]


def test_hf_folder_config_files(tmp_path, smollm2_hf_folder):
    folder = tmp_path / "model"
    shutil.copytree(smollm2_hf_folder, folder)
    (folder / "chat_template.jinja").unlink()
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": "{{ messages[0]['content'] }}"}))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 0]}))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(bos_token={"content": "<|im_start|>", "__type": "AddedToken"}, add_bos_token=True)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    spec = tokenizer_spec_from_hf_folder(folder)
    assert spec.chat_template == "{{ messages[0]['content'] }}"
    assert spec.eos_token_ids == (2, 0)
    assert (spec.bos_token_id, spec.add_bos_token) == (1, True)
    assert Tokenizer.from_spec(spec).encode("Hello") == [1, 19556]


def test_hf_folder_flags_observed_from_post_processor(tmp_path, smollm2_hf_folder):
    folder = tmp_path / "model"
    shutil.copytree(smollm2_hf_folder, folder)
    data = json.loads((folder / "tokenizer.json").read_text())
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1], "tokens": ["<|im_start|>"]}},
    }
    (folder / "tokenizer.json").write_text(json.dumps(data))
    spec = tokenizer_spec_from_hf_folder(folder)
    assert (spec.add_bos_token, spec.add_eos_token) == (True, False)


def test_hf_folder_without_tokenizer_json_is_a_format_error(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text("{}")
    with pytest.raises(ModelFormatError, match=r"tokenizer.json is missing"):
        tokenizer_spec_from_hf_folder(tmp_path)
