"""Read a Hugging Face BERT folder (a sentence-transformers model such as all-MiniLM-L6-v2)
as a compile source for the encoder family.

The tensors keep ``BertModel``'s names (modelfile/encoder.py); a checkpoint saved from
``BertForMaskedLM``/sentence-transformers may prefix them with ``bert.``, which is dropped.
The pooling comes from the sentence-transformers config beside the weights, as
sentence-transformers itself reads it: ``modules.json`` lists the modules in order (a
``Normalize`` module means unit-length embeddings), ``1_Pooling/config.json`` (the Pooling
module's path) picks mean or CLS pooling, and ``sentence_bert_config.json``'s
``max_seq_length`` is the longest input. A folder without ``modules.json`` is a plain BERT:
mean pooling, not normalized, up to ``max_position_embeddings`` tokens.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.compiler.compiler import SourceModel, SourceTensor
from mcp.compiler.hf_tokenizer import tokenizer_spec_from_hf_folder
from mcp.compiler.sentence_config import read_json, sentence_pooling
from mcp.modelfile.spec import ArchitectureConfig, TokenizerSpec

_SKIPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")  # a buffer; the unused pooler


def load_bert_folder(folder: Path, config: dict[str, Any], tensors: list[SourceTensor],
                     sha256: str, license: str | None) -> SourceModel:
    """The encoder ``SourceModel`` of a BERT folder whose config and tensors are already read."""
    if config.get("hidden_act", "gelu") != "gelu":
        raise UnsupportedModelError(f"{folder}: hidden_act {config['hidden_act']!r} is not supported (gelu is)")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModelError(f"{folder}: position_embedding_type {config['position_embedding_type']!r} "
                                    "is not supported (absolute is)")
    renamed = [replace(t, name=t.name.removeprefix("bert.")) for t in tensors]
    return SourceModel(
        name=folder.name, format="hf-safetensors", sha256=sha256,
        architecture=_architecture(folder, config), tokenizer=bert_tokenizer(folder),
        tensors=tuple(t for t in renamed if t.name not in _SKIPPED), license=license,
        base_model=config.get("_name_or_path") or None,
        recipe={"source_architecture": "bert"},
    )


def skipped(name: str) -> bool:
    """Tensors of a BERT checkpoint that the encoder has no place for (read neither dtype nor data)."""
    return name.removeprefix("bert.") in _SKIPPED


def _architecture(folder: Path, config: dict[str, Any]) -> ArchitectureConfig:
    try:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        positions = int(config["max_position_embeddings"])
        return ArchitectureConfig(
            architecture="bert", variant=config["model_type"], vocab_size=int(config["vocab_size"]),
            hidden_size=hidden, intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]), num_attention_heads=heads, num_kv_heads=heads,
            head_dim=hidden // heads, max_position_embeddings=positions,
            rms_norm_eps=float(config.get("layer_norm_eps", 1e-12)), rope_theta=0.0, tie_word_embeddings=False,
            attention_bias=True, pooling=sentence_pooling(folder, positions),
            type_vocab_size=int(config.get("type_vocab_size", 2)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"{folder}/config.json: missing or bad value {exc!r}") from None


def bert_tokenizer(folder: Path) -> TokenizerSpec:
    """The folder's WordPiece tokenizer, with ``[CLS] text [SEP]`` around every input as BERT was trained."""
    spec = tokenizer_spec_from_hf_folder(folder)
    config = read_json(folder / "special_tokens_map.json", {}) | read_json(folder / "tokenizer_config.json", {})
    vocab = json.loads(spec.tokenizer_json)["model"].get("vocab", {})
    cls, sep = config.get("cls_token", "[CLS]"), config.get("sep_token", "[SEP]")
    if cls not in vocab or sep not in vocab:
        raise ModelFormatError(f"{folder}: the tokenizer has no {cls!r} or {sep!r} token; a BERT tokenizer has both")
    return replace(spec, bos_token=cls, bos_token_id=vocab[cls], eos_token=sep, eos_token_ids=(vocab[sep],),
                   add_bos_token=True, add_eos_token=True, chat_template=None)
