"""Build the tokenizer a GGUF file describes, as a Hugging Face ``tokenizers`` serialization.

A GGUF carries no ``tokenizer.json``: it stores the vocabulary under llama.cpp's key names
(``tokenizer.ggml.*``). Two vocabulary kinds are supported:

- ``gpt2``: byte-level BPE from the tokens and merges. The text is first split by the
  pre-tokenizer ``tokenizer.ggml.pre`` names (llama.cpp's regex families).
- ``llama``: SentencePiece BPE (Llama 2, TinyLlama, Mistral). Merges come from the token
  scores; characters outside the vocabulary fall back to the ``<0xNN>`` byte tokens. A space
  is prepended to the text and to every fragment after a special token, as sentencepiece,
  llama.cpp and those models' own ``tokenizer.json`` do.

- ``llama`` in a Gemma 3 GGUF: SentencePiece BPE as Gemma spells it (``gemma_tokenizer.py``).

Control tokens become special added tokens and user-defined tokens plain added tokens, so
both are matched whole in the text. BOS/EOS insertion is not part of the serialization: the
runtime tokenizer adds them from ``TokenizerSpec.add_bos_token`` / ``add_eos_token``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import BPE

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.modelfile.spec import TokenizerSpec

_KEYS = gguf.Keys.Tokenizer
NORMAL, _UNKNOWN, _CONTROL, USER_DEFINED, _UNUSED, _BYTE = (int(t) for t in gguf.TokenType)
_SPACE = "\u2581"  # sentencepiece's visible space

# llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), grouped by the `tokenizer.ggml.pre` names.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_PRE_FAMILIES = {
    "gpt2": ("default", "gpt2", "gpt-2", "mpt", "olmo", "jais"),
    "starcoder": ("smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"),
    "llama3": ("llama-bpe", "llama3", "llama-v3", "falcon3"),
    "qwen2": ("qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"),
}
_PRE_FAMILY = {name: family for family, names in _PRE_FAMILIES.items() for name in names}
# Sentencepiece variants whose files need rules we do not implement (respelled spaces, merge order).
GEMMA_ARCHITECTURES = ("gemma3",)  # SentencePiece as Gemma spells it (gemma_tokenizer.py)
_UNSUPPORTED_SPM_ARCHITECTURES = ("gemma", "gemma2", "gemma3n", "gemma4")


@dataclass(frozen=True)
class Vocabulary:
    tokens: list[str]
    types: list[int]
    scores: list[float] | None
    merges: list[str] | None

    def ids(self) -> dict[str, int]:
        """Token -> id; a token listed twice keeps its first id."""
        ids: dict[str, int] = {}
        for index, token in enumerate(self.tokens):
            ids.setdefault(token, index)
        return ids


def tokenizer_spec_from_gguf(reader: gguf.GGUFReader) -> TokenizerSpec:
    """The tokenizer, special tokens and chat template of a GGUF file."""
    model = read(reader, _KEYS.MODEL)
    if model is None:
        raise ModelFormatError(
            f"{_source(reader)}: the GGUF has no tokenizer ({_KEYS.MODEL} is missing); "
            "use a GGUF converted with its vocabulary, or compile the Hugging Face model folder."
        )
    vocab = _read_vocabulary(reader)
    if model == "gpt2":
        tokenizer = _byte_level_tokenizer(vocab, read(reader, _KEYS.PRE) or "default")
    elif model == "llama" and read(reader, gguf.Keys.General.ARCHITECTURE) in GEMMA_ARCHITECTURES:
        from mcp.compiler.gemma_tokenizer import gemma_spec  # it builds on this module

        return gemma_spec(reader, vocab)
    elif model == "llama":
        _check_spm_architecture(reader)
        tokenizer = sentencepiece_tokenizer(vocab, bool(read(reader, _KEYS.ADD_PREFIX, True)))
    else:
        raise UnsupportedModelError(
            f"{_source(reader)}: GGUF tokenizer model {model!r} is not supported; supported are "
            "'gpt2' (byte-level BPE) and 'llama' (SentencePiece BPE). Compile the Hugging Face "
            "model folder (with its tokenizer.json) instead."
        )
    add_special_tokens(tokenizer, vocab, byte_level=model == "gpt2")
    return _spec(reader, tokenizer, vocab, sentencepiece=model == "llama")


def _spec(
    reader: gguf.GGUFReader, tokenizer: Tokenizer, vocab: Vocabulary, sentencepiece: bool
) -> TokenizerSpec:
    # llama.cpp's defaults for a sentencepiece vocabulary that does not name its special tokens.
    bos_id = _token_id(reader, vocab, _KEYS.BOS_ID, 1 if sentencepiece else None)
    eos_id = _token_id(reader, vocab, _KEYS.EOS_ID, 2 if sentencepiece else None)
    end_ids = (eos_id, _token_id(reader, vocab, _KEYS.EOT_ID), _token_id(reader, vocab, _KEYS.EOM_ID))
    add_bos = bool(read(reader, _KEYS.ADD_BOS, sentencepiece))
    if add_bos and bos_id is None:
        raise ModelFormatError(f"{_source(reader)}: the GGUF asks to add a BOS token but names none")
    return TokenizerSpec(
        tokenizer_json=tokenizer.to_str(),
        chat_template=read(reader, _KEYS.CHAT_TEMPLATE),
        bos_token=vocab.tokens[bos_id] if bos_id is not None else None,
        eos_token=vocab.tokens[eos_id] if eos_id is not None else None,
        bos_token_id=bos_id,
        eos_token_ids=tuple(dict.fromkeys(i for i in end_ids if i is not None)),
        pad_token_id=_token_id(reader, vocab, _KEYS.PAD_ID),
        add_bos_token=add_bos,
        add_eos_token=bool(read(reader, _KEYS.ADD_EOS, False)) and eos_id is not None,
    )


def _byte_level_tokenizer(vocab: Vocabulary, pre: str) -> Tokenizer:
    family = _PRE_FAMILY.get(pre)
    if family is None:
        raise UnsupportedModelError(
            f"GGUF pre-tokenizer {pre!r} is not supported; supported are {sorted(_PRE_FAMILY)}. "
            "Compile the Hugging Face model folder (with its tokenizer.json) instead."
        )
    alphabet = byte_alphabet()
    spelled = set(alphabet.values())
    ids: dict[str, int] = {}
    for index, token in enumerate(vocab.tokens):
        if not set(token) <= spelled:  # a token stored as plain text: spell its UTF-8 bytes
            token = "".join(alphabet[byte] for byte in token.encode("utf-8"))
        ids.setdefault(token, index)
    merges = _split_merges(vocab.merges) if vocab.merges is not None else _merges_by_rank(ids)
    model = BPE(ids, merges, ignore_merges=family == "llama3")
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = _byte_level_pre_tokenizer(family)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _byte_level_pre_tokenizer(family: str) -> pre_tokenizers.PreTokenizer:
    if family == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if family == "starcoder":  # every digit on its own, then the GPT-2 regex
        return pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
        )
    split = _LLAMA3_SPLIT if family == "llama3" else _QWEN2_SPLIT
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def sentencepiece_tokenizer(vocab: Vocabulary, add_space_prefix: bool) -> Tokenizer:
    ids = vocab.ids()
    if vocab.merges is not None:
        merges = _split_merges(vocab.merges)
    elif vocab.scores is not None:
        merges = _merges_by_score(vocab)
    else:
        raise ModelFormatError(f"the sentencepiece vocabulary has neither {_KEYS.SCORES} nor {_KEYS.MERGES}")
    unknown = [token for token, kind in zip(vocab.tokens, vocab.types) if kind == _UNKNOWN]
    model = BPE(ids, merges, unk_token=unknown[0] if unknown else None, fuse_unk=True, byte_fallback=True)
    tokenizer = Tokenizer(model)
    spaces = normalizers.Replace(" ", _SPACE)
    steps = [decoders.Replace(_SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    if add_space_prefix:
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend(_SPACE), spaces])
        steps.append(decoders.Strip(content=" ", left=1, right=0))
    else:
        tokenizer.normalizer = spaces
    tokenizer.decoder = decoders.Sequence(steps)
    return tokenizer


def _merges_by_score(vocab: Vocabulary) -> list[tuple[str, str]]:
    """Every split of a token into two tokens, best first: the merged token's score, then the
    longer left part; ties keep vocabulary order (the order transformers' converter gives)."""
    mergeable: dict[str, int] = {}
    for index, (token, kind) in enumerate(zip(vocab.tokens, vocab.types)):
        if kind not in _NOT_TEXT:
            mergeable.setdefault(token, index)
    ranked = []
    for token, index in mergeable.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in mergeable and right in mergeable:
                order = (index, mergeable[left], mergeable[right])
                ranked.append(((-vocab.scores[index], -len(left), -len(right), *order), (left, right)))
    ranked.sort(key=lambda entry: entry[0])
    return [pair for _, pair in ranked]


_NOT_TEXT = (_UNKNOWN, _CONTROL, _BYTE)  # never the result of merging text


def _merges_by_rank(ids: dict[str, int]) -> list[tuple[str, str]]:
    """Merges implied by a byte-level vocabulary without merges: lower id merges first."""
    ranked = []
    for token, index in ids.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ids and right in ids:
                ranked.append(((index, ids[left], ids[right]), (left, right)))
    ranked.sort(key=lambda entry: entry[0])
    return [pair for _, pair in ranked]


def _split_merges(merges: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for merge in merges:
        left, space, right = merge.partition(" ")
        if not space or not left or not right:
            raise ModelFormatError(f"GGUF merge {merge!r} is not two tokens separated by a space")
        pairs.append((left, right))
    return pairs


def add_special_tokens(tokenizer: Tokenizer, vocab: Vocabulary, byte_level: bool) -> None:
    """Control and unknown tokens become special added tokens, user-defined ones plain added
    tokens. In a byte-level vocabulary only tokens spelled in the byte alphabet qualify: the
    byte-level decoder could not turn any other spelling back into its text."""
    spelled = set(byte_alphabet().values()) if byte_level else None
    special, plain = [], []
    for token, kind in zip(vocab.tokens, vocab.types):
        if spelled is not None and not set(token) <= spelled:
            continue
        if kind in (_CONTROL, _UNKNOWN):
            special.append(AddedToken(token, special=True, normalized=False))
        elif kind == USER_DEFINED:
            plain.append(AddedToken(token, special=False, normalized=False))
    tokenizer.add_special_tokens(special)
    tokenizer.add_tokens(plain)


def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte -> character map: printable Latin-1 bytes stand for themselves, the other
    bytes for the characters from U+0100 on, in byte order."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    alphabet = {byte: chr(byte) for byte in kept}
    others = (byte for byte in range(256) if byte not in alphabet)
    alphabet.update({byte: chr(0x100 + n) for n, byte in enumerate(others)})
    return dict(sorted(alphabet.items()))


def _read_vocabulary(reader: gguf.GGUFReader) -> Vocabulary:
    tokens = read(reader, _KEYS.LIST)
    if not tokens:
        raise ModelFormatError(f"{_source(reader)}: the GGUF has no {_KEYS.LIST}")
    types = read(reader, _KEYS.TOKEN_TYPE) or [NORMAL] * len(tokens)
    scores = read(reader, _KEYS.SCORES)
    for name, values in ((_KEYS.TOKEN_TYPE, types), (_KEYS.SCORES, scores)):
        if values is not None and len(values) != len(tokens):
            raise ModelFormatError(
                f"{_source(reader)}: {name} has {len(values)} entries for {len(tokens)} tokens"
            )
    return Vocabulary(tokens=tokens, types=types, scores=scores, merges=read(reader, _KEYS.MERGES))


def _check_spm_architecture(reader: gguf.GGUFReader) -> None:
    architecture = read(reader, gguf.Keys.General.ARCHITECTURE)
    if architecture in _UNSUPPORTED_SPM_ARCHITECTURES:
        raise UnsupportedModelError(
            f"{_source(reader)}: the sentencepiece vocabulary of a {architecture!r} GGUF is not "
            "supported yet; compile the Hugging Face model folder (with its tokenizer.json) instead."
        )


def _token_id(
    reader: gguf.GGUFReader, vocab: Vocabulary, key: str, default: int | None = None
) -> int | None:
    token_id = read(reader, key, default)
    if token_id is not None and (type(token_id) is not int or not 0 <= token_id < len(vocab.tokens)):
        raise ModelFormatError(
            f"{_source(reader)}: {key} = {str(token_id)[:40]} is outside the vocabulary of {len(vocab.tokens)} tokens"
        )
    return token_id


def read(reader: gguf.GGUFReader, key: str, default: Any = None) -> Any:
    field = reader.get_field(key)
    if field is None:
        return default
    try:
        return field.contents()
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"{_source(reader)}: {key} is not valid UTF-8 ({exc})") from None


def _source(reader: gguf.GGUFReader) -> str:
    return str(getattr(reader.data, "filename", None) or "<gguf>")
