"""Phi-3 / Phi-4-mini against transformers fp32: tiny random Phi3ForCausalLM models, compiled from
their HF folders and from a GGUF written with the gguf package as llama.cpp's converter lays one out.

The long-context model has what Phi-3-mini-128k and Phi-4-mini have: fused qkv and gate_up, partial
rotary (0.75 of a head), LongRoPE (short and long factors, the attention factor) and a sliding
window; its original context is 32 positions, so 40-token prompts run on the long factors (as
transformers does once a forward reaches past the original context) and an engine whose context
stays within 32 runs on the short ones. The Phi-4-mini-shaped model: partial rotary, plain RoPE,
tied embeddings. The paged engine loop (batched decode, prefix caching) gives each sequence
transformers' greedy tokens.
"""

from __future__ import annotations

import pytest
from decoder_models import tiny_phi3, write_phi3_gguf
from families import (
    IDS, assert_loop_matches, assert_matches, assert_native_step_matches, compiled_engine, cpu_engine, q8_0_engine,
    save_folder, tokenizer_files,
)

from mcp.compiler.compiler import compile_model
from mcp.engine.engine import NativeEngine
from mcp.modelfile.reader import open_model

__all__ = ["tokenizer_files"]  # a fixture

ORIGINAL, WINDOW = 32, 24


@pytest.fixture(scope="module")
def hf_model():
    return tiny_phi3(longrope=True, original=ORIGINAL, window=WINDOW)


@pytest.fixture(scope="module")
def mcp_path(hf_model, tokenizer_files, tmp_path_factory):
    folder = save_folder(hf_model, tokenizer_files, tmp_path_factory.mktemp("phi3-hf"))
    out = folder / "tiny.mcp"
    compile_model(folder, out, precision="source")  # the HF fp32 tensors as they are
    return out


@pytest.fixture(scope="module")
def engine(mcp_path) -> NativeEngine:
    return cpu_engine(mcp_path)


def test_hf_folder_compiles_fused_with_longrope_partial_rotary_and_window(engine, hf_model, mcp_path):
    from mcp.modelfile.inspect import describe

    arch = engine.header.architecture
    assert (arch.architecture, arch.rotary_dim, arch.sliding_window, arch.max_position_embeddings) == (
        "phi3", 12, WINDOW, 128)
    scaling = arch.rope_scaling
    assert (scaling.kind, scaling.original_max_position_embeddings, scaling.factor) == ("longrope", ORIGINAL, 4.0)
    assert scaling.attention_factor == hf_model.model.rotary_emb.attention_scaling != 1.0
    names = {spec.name for spec in engine.header.tensors}
    assert {"model.layers.0.self_attn.qkv_proj.weight", "model.layers.0.mlp.gate_up_proj.weight",
            "model.rope_factors_long", "model.rope_factors_short"} <= names
    assert not any(".q_proj." in name or ".gate_proj." in name for name in names)
    # the fused matrices are used as stored: one part each, split into q/k/v and gate/up by size
    layer = engine.model.layers[0]
    assert len(layer.self_attn.qkv_proj.parts) == 1 and layer.self_attn.qkv_proj.sizes == [64, 32, 32]
    assert len(layer.mlp.gate_up_proj.parts) == 1 and layer.mlp.gate_up_proj.sizes == [96, 96]
    with open_model(mcp_path) as model_file:
        text = describe(model_file, show_plan=False, show_tensors=False)
    assert "scaling longrope (factor 4), original context 32" in text and "first 12 of 16 dims" in text
    assert f"sliding window   {WINDOW} tokens, every layer" in text


def test_long_factors_match_transformers_past_the_original_context(engine, hf_model, hf_greedy):
    assert_matches(engine, hf_model, hf_greedy, IDS[:40])


def test_short_factors_match_transformers_within_the_original_context(mcp_path, hf_model, hf_greedy):
    """A context of 32 never outgrows the original one: the short factors, as transformers uses them."""
    assert_matches(cpu_engine(mcp_path, max_context=ORIGINAL), hf_model, hf_greedy, IDS[:20], num_tokens=10)


def test_phi4_mini_shape_matches_transformers(tokenizer_files, hf_greedy, tmp_path):
    """Partial rotary with plain RoPE and a tied head, as Phi-4-mini without its long context."""
    hf_model = tiny_phi3(longrope=False, window=None)
    folder = save_folder(hf_model, tokenizer_files, tmp_path / "phi4-mini")
    engine = compiled_engine(folder, tmp_path / "tiny.mcp")
    assert engine.header.architecture.rope_scaling is None and engine.header.architecture.tie_word_embeddings
    assert_matches(engine, hf_model, hf_greedy, IDS[:40])


def test_engine_loop_batches_and_reuses_prefixes_with_transformers_tokens(engine, hf_model, hf_greedy):
    assert_loop_matches(engine, hf_model, hf_greedy, [IDS[:40], IDS[5:45], IDS[:33], IDS[:40] + [77, 78, 79]])


def test_gguf_matches_transformers(hf_model, hf_greedy, tmp_path):
    path = tmp_path / "tiny-phi3.gguf"
    write_phi3_gguf(hf_model, path)
    header = compile_model(path, tmp_path / "tiny.mcp", precision="source")
    arch = header.architecture
    assert (arch.architecture, arch.rotary_dim, arch.sliding_window) == ("phi3", 12, WINDOW)
    assert arch.rope_scaling.attention_factor == pytest.approx(hf_model.model.rotary_emb.attention_scaling, rel=1e-7)
    assert_matches(cpu_engine(tmp_path / "tiny.mcp"), hf_model, hf_greedy, IDS[:40])


def test_a_transformers_4_config_compiles_to_the_same_architecture(engine, mcp_path, tmp_path):
    """Phi-3 checkpoints on the Hub say ``rope_scaling`` {"type": "su" or "longrope", ...} with
    ``rope_theta`` and ``partial_rotary_factor`` beside it (transformers 4.x), not ``rope_parameters``."""
    import json
    import shutil

    folder = tmp_path / "phi3-4x"
    shutil.copytree(mcp_path.parent, folder, ignore=shutil.ignore_patterns("*.mcp"))
    config = json.loads((folder / "config.json").read_text())
    params = config.pop("rope_parameters")
    config.update(rope_theta=params["rope_theta"], partial_rotary_factor=params["partial_rotary_factor"],
                  rope_scaling={"type": "su", "short_factor": params["short_factor"],
                                "long_factor": params["long_factor"]})
    (folder / "config.json").write_text(json.dumps(config))
    header = compile_model(folder, tmp_path / "4x.mcp", precision="source")
    assert header.architecture == engine.header.architecture


@pytest.mark.parametrize("change, error, message", [
    ({"rope_type": "dynamic"}, "UnsupportedModelError", "RoPE scaling 'dynamic' is not supported for Phi-3"),
    ({"short_factor": [1.0, 2.0]}, "ModelFormatError", "rope short_factor must be a list of 6 numbers"),
])
def test_phi3_rope_configs_the_engine_cannot_run_are_refused(mcp_path, tmp_path, change, error, message):
    import json
    import shutil

    from mcp.base import errors

    folder = tmp_path / "changed"
    shutil.copytree(mcp_path.parent, folder, ignore=shutil.ignore_patterns("*.mcp"))
    config = json.loads((folder / "config.json").read_text())
    config["rope_parameters"].update(change)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(getattr(errors, error), match=message):
        compile_model(folder, tmp_path / "changed.mcp")


def test_native_step_matches_the_torch_modules(hf_model, tmp_path):
    """A Q8_0 GGUF of the LongRoPE model: partial rotary, the LongRoPE tables and the window on
    every layer in the native step, against the torch modules over chunked prefills and 16
    batched decodes past the window."""
    write_phi3_gguf(hf_model, tmp_path / "tiny-q8_0.gguf", q8_0=True)
    engine = q8_0_engine(tmp_path / "tiny-q8_0.gguf", tmp_path / "tiny.mcp")
    assert_native_step_matches(engine, [IDS[:40], IDS[3:16], IDS[9:38]])
