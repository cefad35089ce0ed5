"""Small model files for the bad-file tests: a valid tiny ``.mcp`` and ways to break it.

``tiny_model_bytes()`` is a whole, valid one-layer ``.mcp`` (64-token word-level tokenizer,
every kind of encoding: f32, bf16, q8_0, q4_0, int4 with companions, int8 with companions)
that the engine loads in milliseconds. ``McpParts`` splits a file into its safetensors
entries, its parsed ``.mcp`` header and its data section, and ``rebuild`` joins them again
(data offsets stay as the entries say), so a test changes one field and writes the result.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

HEADER_KEY = "mcp.header"


def tiny_tokenizer_json() -> str:
    """A 64-token word-level tokenizer (tokens t0..t59 and four specials)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3, **{f"t{i}": i + 4 for i in range(60)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer.to_str()


def tiny_header():
    from mcp.modelfile.spec import ArchitectureConfig, Lineage, ModelHeader, PrecisionPlan, TensorSpec, TokenizerSpec

    arch = ArchitectureConfig(architecture="llama", variant="llama", vocab_size=64, hidden_size=64,
                              intermediate_size=128, num_layers=1, num_attention_heads=2, num_kv_heads=1,
                              head_dim=32, max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
                              tie_word_embeddings=True)
    tokenizer = TokenizerSpec(tiny_tokenizer_json(), "{% for m in messages %}{{ m['content'] }} {% endfor %}",
                              "<s>", "</s>", 1, (2,), pad_token_id=3, add_bos_token=True)
    layer = "model.layers.0"
    tensors = (
        TensorSpec("model.embed_tokens.weight", "q8_0", (64, 64), ""),
        TensorSpec(f"{layer}.input_layernorm.weight", "f32", (64,), ""),
        TensorSpec(f"{layer}.self_attn.q_proj.weight", "int4", (64, 64), "", layout="rows"),
        TensorSpec(f"{layer}.self_attn.q_proj.weight.qparams", "f16", (64, 2, 2), ""),
        TensorSpec(f"{layer}.self_attn.q_proj.weight.scale_zero", "bf16", (2, 64, 2), ""),
        TensorSpec(f"{layer}.self_attn.k_proj.weight", "int8", (32, 64), ""),
        TensorSpec(f"{layer}.self_attn.k_proj.weight.qparams", "f16", (32, 2), ""),
        TensorSpec(f"{layer}.self_attn.v_proj.weight", "q4_0", (32, 64), ""),
        TensorSpec(f"{layer}.self_attn.o_proj.weight", "bf16", (64, 64), ""),
        TensorSpec(f"{layer}.post_attention_layernorm.weight", "f32", (64,), ""),
        TensorSpec(f"{layer}.mlp.gate_proj.weight", "f16", (128, 64), ""),
        TensorSpec(f"{layer}.mlp.up_proj.weight", "bf16", (128, 64), ""),
        TensorSpec(f"{layer}.mlp.down_proj.weight", "f32", (64, 128), ""),
        TensorSpec("model.norm.weight", "f32", (64,), ""),
    )
    lineage = Lineage(source_name="hand-made", source_sha256="ab" * 32, source_format="gguf",
                      compiler_version="test", recipe={"precision": "source"},
                      created_at="2026-01-01T00:00:00+00:00")
    return ModelHeader("tiny", arch, tokenizer, tensors, PrecisionPlan(), lineage)


def _stored_value(spec, rng: np.random.Generator) -> np.ndarray | torch.Tensor:
    """Small finite values of the stored dtype and shape (block scales too: fp16 0.01)."""
    from mcp.modelfile.spec import storage_dtype, stored_shape

    shape, dtype = stored_shape(spec.encoding, spec.shape), storage_dtype(spec.encoding)
    if dtype == "U8":
        value = rng.integers(0, 256, size=shape, dtype=np.uint8)
        if spec.encoding in ("q8_0", "q4_0"):  # each block starts with its fp16 scale
            step = 34 if spec.encoding == "q8_0" else 18
            blocks = value.reshape(shape[0], -1, step)
            blocks[..., 0:2] = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
        return value
    if dtype == "I8":
        return rng.integers(-8, 8, size=shape, dtype=np.int8)
    values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * 0.02)
    if spec.name.endswith("layernorm.weight") or spec.name == "model.norm.weight":
        values = torch.ones(shape)
    return values.to({"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dtype])


def write_tiny_model(path: Path) -> Path:
    """A valid tiny ``.mcp`` at ``path``."""
    from mcp.modelfile.writer import write_model

    header, rng = tiny_header(), np.random.default_rng(0)
    write_model(path, header, {spec.name: _stored_value(spec, rng) for spec in header.tensors})
    return path


@dataclass
class McpParts:
    """A ``.mcp`` file taken apart: its safetensors entries, its ``.mcp`` header, its data."""

    entries: dict[str, Any]
    header: dict[str, Any]
    data: bytes

    @classmethod
    def of(cls, raw: bytes) -> McpParts:
        (length,) = struct.unpack("<Q", raw[:8])
        entries = json.loads(raw[8:8 + length])
        header = json.loads(entries["__metadata__"][HEADER_KEY])
        return cls(entries, header, raw[8 + length:])

    def rebuild(self) -> bytes:
        entries = {**self.entries, "__metadata__": {**self.entries["__metadata__"],
                                                    HEADER_KEY: json.dumps(self.header)}}
        prefix = json.dumps(entries).encode()
        return struct.pack("<Q", len(prefix)) + prefix + self.data

    def tensor(self, name: str) -> dict[str, Any]:
        """The header's entry of tensor ``name`` (to change it in place)."""
        return next(t for t in self.header["tensors"] if t["name"] == name)


def with_header(raw: bytes, change) -> bytes:
    """``raw`` with ``change(parts)`` applied to its parts."""
    parts = McpParts.of(raw)
    change(parts)
    return parts.rebuild()
