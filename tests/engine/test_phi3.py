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

import gguf
import numpy as np
import pytest
import torch
from families import IDS, assert_loop_matches, assert_native_step_matches_torch, save_folder, tokenizer_files

from mcp.compiler.compiler import compile_model
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

__all__ = ["tokenizer_files"]  # a fixture

VOCAB, HEAD_DIM, ORIGINAL, WINDOW = 49152, 16, 32, 24
GREEDY = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)


def _hf_model(longrope: bool):
    from transformers import Phi3Config, Phi3ForCausalLM

    torch.manual_seed(0)
    rotated = int(HEAD_DIM * 0.75)
    extra = dict(tie_word_embeddings=True)
    if longrope:
        extra = dict(tie_word_embeddings=False, original_max_position_embeddings=ORIGINAL, sliding_window=WINDOW,
                     rope_scaling={"type": "longrope",
                                   "short_factor": torch.linspace(1.0, 1.5, rotated // 2).tolist(),
                                   "long_factor": torch.linspace(1.0, 12.0, rotated // 2).tolist()})
    config = Phi3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                        partial_rotary_factor=0.75, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
                        pad_token_id=0, **extra)
    model = Phi3ForCausalLM(config).eval()
    with torch.no_grad():  # random init leaves the norms at 1: perturb them so that each one counts
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(torch.randn_like(param) * 0.1)
    return model


@pytest.fixture(scope="module")
def hf_model():
    return _hf_model(longrope=True)


@pytest.fixture(scope="module")
def mcp_path(hf_model, tokenizer_files, tmp_path_factory):
    folder = save_folder(hf_model, tokenizer_files, tmp_path_factory.mktemp("phi3-hf"))
    out = folder / "tiny.mcp"
    compile_model(folder, out, precision="source")  # the HF fp32 tensors as they are
    return out


def _engine(path, max_context: int | None = None) -> NativeEngine:
    with open_model(path, verify=True) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32", max_context=max_context))


@pytest.fixture(scope="module")
def engine(mcp_path) -> NativeEngine:
    return _engine(mcp_path)


def _assert_matches(engine, hf_model, hf_greedy, prompt, num_tokens=16):
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([prompt])).logits[0].float()
    ours = contiguous_decoder(engine).score(prompt)
    assert theirs.abs().max() > 1e-2  # the random model says something
    assert (ours - theirs).abs().max().item() < 1e-5
    params = SamplingParams(max_tokens=num_tokens, temperature=0.0, ignore_eos=True)
    generated = [step.token_id for step in contiguous_decoder(engine).generate(prompt, params)]
    assert generated == hf_greedy(hf_model, prompt, num_tokens)


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
    _assert_matches(engine, hf_model, hf_greedy, IDS[:40])


def test_short_factors_match_transformers_within_the_original_context(mcp_path, hf_model, hf_greedy):
    """A context of 32 never outgrows the original one: the short factors, as transformers uses them."""
    _assert_matches(_engine(mcp_path, max_context=ORIGINAL), hf_model, hf_greedy, IDS[:20], num_tokens=10)


def test_phi4_mini_shape_matches_transformers(tokenizer_files, hf_greedy, tmp_path):
    """Partial rotary with plain RoPE and a tied head, as Phi-4-mini without its long context."""
    hf_model = _hf_model(longrope=False)
    folder = save_folder(hf_model, tokenizer_files, tmp_path / "phi4-mini")
    compile_model(folder, tmp_path / "tiny.mcp", precision="source")
    engine = _engine(tmp_path / "tiny.mcp")
    assert engine.header.architecture.rope_scaling is None and engine.header.architecture.tie_word_embeddings
    _assert_matches(engine, hf_model, hf_greedy, IDS[:40])


def test_engine_loop_batches_and_reuses_prefixes_with_transformers_tokens(engine, hf_model, hf_greedy):
    assert_loop_matches(engine, hf_model, hf_greedy, [IDS[:40], IDS[5:45], IDS[:33], IDS[:40] + [77, 78, 79]])


def test_gguf_matches_transformers(hf_model, hf_greedy, tmp_path):
    path = tmp_path / "tiny-phi3.gguf"
    write_phi3_gguf(hf_model, path)
    header = compile_model(path, tmp_path / "tiny.mcp", precision="source")
    arch = header.architecture
    assert (arch.architecture, arch.rotary_dim, arch.sliding_window) == ("phi3", 12, WINDOW)
    assert arch.rope_scaling.attention_factor == pytest.approx(hf_model.model.rotary_emb.attention_scaling, rel=1e-7)
    _assert_matches(_engine(tmp_path / "tiny.mcp"), hf_model, hf_greedy, IDS[:40])


def write_phi3_gguf(hf_model, path, q8_0: bool = False) -> None:
    """The model as llama.cpp's converter (Phi3MiniModel) writes it: fused attn_qkv and ffn_up,
    F32 tensors (``q8_0``: the matrices in Q8_0), LongRoPE factors as tensors, and a byte-less
    gpt2-style vocabulary."""
    config = hf_model.config
    rotated = int(HEAD_DIM * 0.75)
    writer = gguf.GGUFWriter(path, "phi3")
    for add, value in ((writer.add_block_count, 2), (writer.add_context_length, 128),
                       (writer.add_embedding_length, 64), (writer.add_feed_forward_length, 96),
                       (writer.add_head_count, 4), (writer.add_head_count_kv, 2),
                       (writer.add_layer_norm_rms_eps, config.rms_norm_eps), (writer.add_rope_freq_base, 10000.0),
                       (writer.add_rope_dimension_count, rotated), (writer.add_rope_scaling_orig_ctx_len, ORIGINAL),
                       (writer.add_rope_scaling_attn_factors, hf_model.model.rotary_emb.attention_scaling),
                       (writer.add_sliding_window, WINDOW)):
        add(value)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])
    writer.add_token_types([int(gguf.TokenType.NORMAL)] * VOCAB)
    writer.add_token_merges([])
    writer.add_eos_token_id(2)
    params = config.rope_parameters
    for which in ("long", "short"):
        writer.add_tensor(f"rope_factors_{which}.weight", np.array(params[f"{which}_factor"], dtype=np.float32))
    for name, tensor in hf_model.state_dict().items():
        value = np.ascontiguousarray(tensor.float().numpy())
        if q8_0 and value.ndim == 2:
            kind = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(_gguf_name(name), gguf.quants.quantize(value, kind), raw_dtype=kind)
        else:
            writer.add_tensor(_gguf_name(name), value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


_GGUF_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
               "self_attn.qkv_proj": "attn_qkv", "self_attn.o_proj": "attn_output",
               "mlp.gate_up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def _gguf_name(name: str) -> str:
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    if name in top:
        return top[name]
    _, _, index, rest = name.split(".", 3)
    return f"blk.{index}.{_GGUF_NAMES[rest.removesuffix('.weight')]}.weight"


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
    """A Q8_0 GGUF (every matrix on the native kernels, exact dots) of the LongRoPE model: partial
    rotary, the LongRoPE tables and the window on every layer in the native step, against the
    torch modules over chunked prefills and 16 batched decodes past the window (teacher-forced);
    logits within fp32 summation-order differences."""
    write_phi3_gguf(hf_model, tmp_path / "tiny-q8_0.gguf", q8_0=True)
    compile_model(tmp_path / "tiny-q8_0.gguf", tmp_path / "tiny.mcp")
    with open_model(tmp_path / "tiny.mcp") as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", decode_dots="exact"))
    assert engine.plan.decode_step == "native", engine.precision
    assert_native_step_matches_torch(engine, [IDS[:40], IDS[3:16], IDS[9:38]], prefill_chunk=8,  # the native step
                                     decode_id=lambda step, row: IDS[(step + row) % len(IDS)])
