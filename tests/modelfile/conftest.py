"""Fixtures for the .mcp container tests: a tiny hand-made model, and a real tokenizer folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from mcp.modelfile.spec import (
    ArchitectureConfig,
    Lineage,
    ModelHeader,
    PrecisionPlan,
    TensorSpec,
    TokenizerSpec,
)


_REST = {  # the rest of the one-layer model, f32
    "model.layers.0.input_layernorm.weight": (32,),
    "model.layers.0.self_attn.q_proj.weight": (32, 32),
    "model.layers.0.self_attn.k_proj.weight": (16, 32),
    "model.layers.0.self_attn.v_proj.weight": (16, 32),
    "model.layers.0.self_attn.o_proj.weight": (32, 32),
    "model.layers.0.post_attention_layernorm.weight": (32,),
    "model.layers.0.mlp.gate_proj.weight": (64, 32),
    "model.layers.0.mlp.down_proj.weight": (32, 64),
}


@pytest.fixture
def tiny_header() -> ModelHeader:
    """A whole one-layer model (open_model checks the tensor table against the architecture);
    its first three tensors are one per kind of encoding (dense f32, GGUF blocks, bf16)."""
    arch = ArchitectureConfig(
        architecture="llama", variant="llama", vocab_size=8, hidden_size=32, intermediate_size=64,
        num_layers=1, num_attention_heads=2, num_kv_heads=1, head_dim=16,
        max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
    )
    tokenizer = TokenizerSpec(
        tokenizer_json='{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}}}', chat_template=None,
        bos_token=None, eos_token="b", bos_token_id=None, eos_token_ids=(1,),
    )
    tensors = (
        TensorSpec("model.norm.weight", "f32", (32,), ""),
        TensorSpec("model.embed_tokens.weight", "q8_0", (8, 32), ""),
        TensorSpec("model.layers.0.mlp.up_proj.weight", "bf16", (64, 32), ""),
        *(TensorSpec(name, "f32", shape, "") for name, shape in _REST.items()),
    )
    lineage = Lineage(
        source_name="hand-made", source_sha256="ab" * 32, source_format="gguf",
        compiler_version="test", recipe={"precision": "source"}, created_at="2026-01-01T00:00:00+00:00",
    )
    return ModelHeader("tiny", arch, tokenizer, tensors, PrecisionPlan(), lineage)


@pytest.fixture
def tiny_tensors() -> dict[str, np.ndarray | torch.Tensor]:
    """Stored representations matching ``tiny_header``."""
    numbers = np.random.default_rng(0)
    up = torch.randn(64, 32, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    return {
        "model.norm.weight": numbers.standard_normal(32).astype(np.float32),
        "model.embed_tokens.weight": numbers.integers(0, 256, size=(8, 34), dtype=np.uint8),
        "model.layers.0.mlp.up_proj.weight": up,
        **{name: numbers.standard_normal(shape).astype(np.float32) for name, shape in _REST.items()},
    }


@pytest.fixture(scope="session")
def tokenizer_files(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the SmolLM2 tokenizer saved by transformers (tokenizer.json and friends)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name)
    folder = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def add_tokenizer(tokenizer_files: Path):
    """Copy the tokenizer files into a model folder."""

    def add(folder: Path) -> Path:
        for item in tokenizer_files.iterdir():
            shutil.copy(item, folder / item.name)
        return folder

    return add
