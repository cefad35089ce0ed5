"""Gemma 3's tokenizer from its GGUF: SentencePiece BPE with Gemma's own spelling rules.

What sets a Gemma vocabulary apart from Llama 2's (gguf_tokenizer.py), as Hugging Face's
GGUF loader and ``GemmaTokenizer`` read it, which is the reference the tests compare with:
- no space is prepended to the text (sentencepiece's ``add_dummy_prefix`` is off for Gemma,
  whatever the file's ``add_space_prefix`` says);
- tokens of two or more spaces are stored as real spaces but looked up as ``▁▁...``;
- the file lists no merges and Gemma's scores do not follow its merge order: the order of the
  tokens in the file does, so merges rank by token id;
- Gemma GGUFs made by some converters name token 1 as BOS, EOS, unknown and padding at once;
  the special tokens are taken by their names (``<bos>``, ``<eos>``, ``<pad>``), and the end of
  a chat turn (``<end_of_turn>``) also ends generation;
- the GGUF has no chat template: Gemma's (text turns, a system message folded into the first
  user turn) is supplied.
"""

from __future__ import annotations

import gguf

from mcp.base.errors import ModelFormatError
from mcp.compiler.gguf_tokenizer import NORMAL, USER_DEFINED, Vocabulary, add_special_tokens, read, sentencepiece_tokenizer
from mcp.modelfile.spec import TokenizerSpec

GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set first_user_prefix = '' -%}{%- set loop_messages = messages -%}{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{{ message['content'] | trim }}{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)
_SPACE = "\u2581"


def gemma_spec(reader: gguf.GGUFReader, vocab: Vocabulary) -> TokenizerSpec:
    """The tokenizer spec of a Gemma 3 GGUF's vocabulary."""
    spelled = _respelled(vocab)
    tokenizer = sentencepiece_tokenizer(spelled, add_space_prefix=False)
    add_special_tokens(tokenizer, spelled, byte_level=False)
    ids = {token: index for index, token in reversed(list(enumerate(vocab.tokens)))}  # first id wins
    missing = [name for name in ("<bos>", "<eos>") if name not in ids]
    if missing:
        raise ModelFormatError(f"the Gemma vocabulary has no {' or '.join(missing)} token")
    ends = tuple(ids[name] for name in ("<eos>", "<end_of_turn>") if name in ids)
    return TokenizerSpec(
        tokenizer_json=tokenizer.to_str(),
        chat_template=read(reader, gguf.Keys.Tokenizer.CHAT_TEMPLATE) or GEMMA_CHAT_TEMPLATE,
        bos_token="<bos>",
        eos_token="<eos>",
        bos_token_id=ids["<bos>"],
        eos_token_ids=ends,
        pad_token_id=ids.get("<pad>"),
        add_bos_token=True,
        add_eos_token=False,
    )


def _respelled(vocab: Vocabulary) -> Vocabulary:
    """Space-run tokens spelled with ``▁`` (and plain vocabulary, not added tokens), scores
    that rank merges by token id."""
    tokens, types = list(vocab.tokens), list(vocab.types)
    for index, token in enumerate(tokens):
        if " " in token and not token.strip():
            tokens[index] = _SPACE * len(token)
            if types[index] == USER_DEFINED:
                types[index] = NORMAL
    return Vocabulary(tokens=tokens, types=types, scores=[-float(i) for i in range(len(tokens))], merges=None)
