"""Qwen3 (dense) against transformers fp32: a tiny random Qwen3ForCausalLM, compiled from its HF
folder and from a GGUF written with the gguf package as llama.cpp lays one out ("qwen3").

Three layers with a head_dim (32) other than hidden / heads (16) and perturbed q/k norms, so that
the per-head norms before RoPE show in the logits; an untied head from the folder, a tied one from
the GGUF. The paged engine loop (batched decode, prefix caching) must give each sequence
transformers' greedy tokens.
"""

from __future__ import annotations

import pytest
import torch
from families import (
    IDS, assert_loop_matches, assert_matches, assert_native_step_matches, compiled_engine, q8_0_engine, save_folder,
    tokenizer_files,
)
from qwen3_models import TINY, perturbed, write_gguf

from mcp.compiler.compiler import compile_model
from mcp.engine.engine import NativeEngine

__all__ = ["tokenizer_files"]  # a fixture


def _hf_model(tie_word_embeddings: bool):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    return perturbed(Qwen3ForCausalLM(Qwen3Config(**TINY, tie_word_embeddings=tie_word_embeddings)))


@pytest.fixture(scope="module")
def hf_model():
    return _hf_model(tie_word_embeddings=False)


@pytest.fixture(scope="module")
def engine(hf_model, tokenizer_files, tmp_path_factory) -> NativeEngine:
    folder = save_folder(hf_model, tokenizer_files, tmp_path_factory.mktemp("qwen3-hf"))
    return compiled_engine(folder, tmp_path_factory.mktemp("qwen3-mcp") / "tiny.mcp")


def test_hf_folder_compiles_to_qwen3(engine):
    arch = engine.header.architecture
    assert (arch.architecture, arch.variant, arch.head_dim, arch.attention_bias) == ("qwen3", "qwen3", 32, False)
    assert not arch.tie_word_embeddings and arch.num_experts == 0
    assert engine.plan.decode_step == "torch"  # the native step is the Llama family's
    assert "model.layers.2.self_attn.q_norm.weight" in {spec.name for spec in engine.header.tensors}


def test_hf_folder_matches_transformers(engine, hf_model, hf_greedy):
    assert_matches(engine, hf_model, hf_greedy)


def test_engine_loop_batches_and_reuses_prefixes_with_transformers_tokens(engine, hf_model, hf_greedy):
    assert_loop_matches(engine, hf_model, hf_greedy)


def test_gguf_matches_transformers(hf_greedy, tmp_path):
    hf_model = _hf_model(tie_word_embeddings=True)
    path = tmp_path / "tiny-qwen3.gguf"
    write_gguf(hf_model, path, "qwen3")
    engine = compiled_engine(path, tmp_path / "tiny.mcp")
    arch = engine.header.architecture
    assert (arch.architecture, arch.variant, arch.tie_word_embeddings) == ("qwen3", "qwen3", True)
    assert engine.header.lineage.recipe["qk_layout"] == "native"
    assert_matches(engine, hf_model, hf_greedy)


def test_native_step_matches_the_torch_modules(tmp_path):
    """A Q8_0 GGUF: the native decode step, q/k norms included, against the torch modules over
    three sequences' chunked prefills and 16 batched decodes."""
    import gguf

    path = tmp_path / "tiny-q8_0.gguf"
    write_gguf(_hf_model(tie_word_embeddings=True), path, "qwen3", gguf.GGMLQuantizationType.Q8_0)
    assert_native_step_matches(q8_0_engine(path, tmp_path / "tiny.mcp"), [IDS[:40], IDS[60:73], IDS[10:39]])


@pytest.mark.parametrize("change, message", [
    ({"attention_bias": True}, "attention_bias is not supported for Qwen3"),
    ({"use_sliding_window": True, "sliding_window": 16}, "use_sliding_window is not supported for Qwen3"),
])
def test_qwen3_configs_the_engine_cannot_run_are_refused(hf_model, tokenizer_files, tmp_path, change, message):
    import json

    from mcp.base.errors import UnsupportedModelError

    folder = save_folder(hf_model, tokenizer_files, tmp_path / "changed")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(UnsupportedModelError, match=message):
        compile_model(folder, tmp_path / "changed.mcp")
