"""The tensor table and checks of a BERT-family encoder (``architecture`` ``"bert"``).

Tensor names are Hugging Face ``BertModel``'s, kept as they are: an encoder shares no layer
with the Llama decoder, so there is nothing to gain from renaming. The pooler is left out:
embeddings pool the final hidden states as the model's ``Pooling`` says, never through it.
"""

from __future__ import annotations

from mcp.base.errors import ModelFormatError
from mcp.modelfile.spec import ArchitectureConfig

ENCODER_ARCHITECTURES = ("bert",)
POOLING_MODES = ("mean", "cls", "last")


def encoder_tensor_shapes(arch: ArchitectureConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of a BERT encoder with its logical shape (torch ``Linear`` layout), in order."""
    hidden, inner = arch.hidden_size, arch.intermediate_size
    attn_rows = arch.num_attention_heads * arch.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (arch.vocab_size, hidden),
        "embeddings.position_embeddings.weight": (arch.max_position_embeddings, hidden),
        "embeddings.token_type_embeddings.weight": (arch.type_vocab_size, hidden),
        "embeddings.LayerNorm.weight": (hidden,),
        "embeddings.LayerNorm.bias": (hidden,),
    }
    for i in range(arch.num_layers):
        layer = f"encoder.layer.{i}"
        for proj in ("query", "key", "value"):
            shapes[f"{layer}.attention.self.{proj}.weight"] = (attn_rows, hidden)
            shapes[f"{layer}.attention.self.{proj}.bias"] = (attn_rows,)
        blocks = (("attention.output", hidden, attn_rows), ("intermediate", inner, hidden), ("output", hidden, inner))
        for block, rows, cols in blocks:
            shapes[f"{layer}.{block}.dense.weight"] = (rows, cols)
            shapes[f"{layer}.{block}.dense.bias"] = (rows,)
            if block != "intermediate":
                shapes[f"{layer}.{block}.LayerNorm.weight"] = (hidden,)
                shapes[f"{layer}.{block}.LayerNorm.bias"] = (hidden,)
    return shapes


def check_encoder(arch: ArchitectureConfig, source: str) -> None:
    """An encoder embeds: it needs a pooling, token types, and heads that split the hidden size."""
    if arch.pooling is None:
        raise ModelFormatError(f"{source}: architecture.pooling is missing; an encoder ({arch.architecture}) "
                               "only embeds, so it needs one")
    if not 1 <= arch.type_vocab_size <= 1024:
        raise ModelFormatError(f"{source}: architecture.type_vocab_size is {arch.type_vocab_size}; "
                               "a BERT encoder has between 1 and 1024 token types")
    if arch.num_kv_heads != arch.num_attention_heads:
        raise ModelFormatError(f"{source}: a BERT encoder has as many key/value heads as query heads, "
                               f"not {arch.num_kv_heads} and {arch.num_attention_heads}")


def check_pooling(arch: ArchitectureConfig, source: str) -> None:
    """A declared pooling names a known mode and a token limit the position table covers."""
    pooling = arch.pooling
    if pooling is None:
        return
    if pooling.mode not in POOLING_MODES:
        raise ModelFormatError(f"{source}: architecture.pooling.mode is {pooling.mode!r}; "
                               f"it must be one of {', '.join(POOLING_MODES)}")
    if not 1 <= pooling.max_tokens <= arch.max_position_embeddings:
        raise ModelFormatError(f"{source}: architecture.pooling.max_tokens is {pooling.max_tokens}; it must be "
                               f"between 1 and max_position_embeddings ({arch.max_position_embeddings})")
