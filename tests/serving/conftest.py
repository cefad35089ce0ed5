"""Fixtures of the serving tests: a tiny random-weight model and the real default model."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with the SmolLM2 tokenizer, compiled to .mcp: loads in milliseconds."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mcp.modelfile.compiler import compile_model

    folder = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name)
    tokenizer.save_pretrained(folder)
    out = folder / "tiny.mcp"
    compile_model(folder, out, name="tiny")
    return out
