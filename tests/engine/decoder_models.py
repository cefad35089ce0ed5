"""Tiny random models of the families with a sliding window, shared by the engine, serving and
consistency tests: Phi-3 and Mistral (a window on every layer) and Gemma 3 (windowed layers
among global ones), built with transformers; Phi-3 and Mistral also written as GGUF with the gguf
package as llama.cpp's converter lays one out (Phi3MiniModel; Mistral as ``llama``)."""

from __future__ import annotations

import gguf
import numpy as np
import torch
from families import add_tokenizer, perturbed, write_gguf_tensors

VOCAB, HEAD_DIM = 49152, 16
SHAPE = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)


def tiny_phi3(longrope: bool = True, original: int = 32, window: int | None = 24, partial_rotary: float = 0.75):
    """Phi-3-mini-128k's shape (``longrope``): partial rotary, LongRoPE short and long factors over
    an ``original`` context, a ``window``, an untied head. Without: plain RoPE and a tied head, as
    Phi-4-mini without its long context (or Phi-3-mini-4k with ``partial_rotary`` 1.0)."""
    from transformers import Phi3Config, Phi3ForCausalLM

    torch.manual_seed(0)
    extra = dict(tie_word_embeddings=True)
    if longrope:
        half = int(HEAD_DIM * partial_rotary) // 2
        extra = dict(tie_word_embeddings=False, original_max_position_embeddings=original,
                     rope_scaling={"type": "longrope", "short_factor": torch.linspace(1.0, 1.5, half).tolist(),
                                   "long_factor": torch.linspace(1.0, 12.0, half).tolist()})
    config = Phi3Config(**SHAPE, intermediate_size=96, max_position_embeddings=128, sliding_window=window,
                        partial_rotary_factor=partial_rotary, pad_token_id=0, **extra)
    return perturbed(Phi3ForCausalLM(config), scale=0.1)


def tiny_mistral(window: int = 16):
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    config = MistralConfig(**SHAPE, intermediate_size=128, max_position_embeddings=256, tie_word_embeddings=False,
                           sliding_window=window)
    return perturbed(MistralForCausalLM(config), scale=0.1)


def tiny_gemma3(query_pre_attn_scalar: int = 48, window: int = 16, layers: int = 7):
    """Gemma 3's layout: ``layers`` layers, every sixth global and the others windowed, QK norms,
    256-dim-style heads made small (32), an attention scale from ``query_pre_attn_scalar`` (one
    other than head_dim's, as an HF config may give)."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
                              sliding_window=window, query_pre_attn_scalar=query_pre_attn_scalar)
    return perturbed(Gemma3ForCausalLM(config))


def write_phi3_gguf(hf_model, path, q8_0: bool = False, tokenizer: gguf.GGUFReader | None = None) -> None:
    """The model as llama.cpp's converter (Phi3MiniModel) writes it: fused attn_qkv and ffn_up,
    F32 tensors (``q8_0``: the matrices in Q8_0), LongRoPE factors as tensors, the window when
    there is one, and ``tokenizer``'s vocabulary (families.add_tokenizer)."""
    config, params = hf_model.config, hf_model.config.rope_parameters
    writer = gguf.GGUFWriter(path, "phi3")
    _add_shape(writer, config, 10000.0)
    writer.add_rope_dimension_count(int(HEAD_DIM * params["partial_rotary_factor"]))
    if config.sliding_window:
        writer.add_sliding_window(config.sliding_window)
    add_tokenizer(writer, tokenizer)
    if params["rope_type"] == "longrope":
        writer.add_rope_scaling_orig_ctx_len(config.original_max_position_embeddings)
        writer.add_rope_scaling_attn_factors(hf_model.model.rotary_emb.attention_scaling)
        for which in ("long", "short"):
            writer.add_tensor(f"rope_factors_{which}.weight", np.array(params[f"{which}_factor"], dtype=np.float32))
    kind = gguf.GGMLQuantizationType.Q8_0 if q8_0 else gguf.GGMLQuantizationType.F32
    write_gguf_tensors(writer, {_gguf_name(name): tensor.float().numpy()
                                for name, tensor in hf_model.state_dict().items()
                                if not (name == "lm_head.weight" and config.tie_word_embeddings)}, kind)


def write_mistral_gguf(hf_model, reference, path) -> None:
    """``hf_model`` as a Q8_0 llama GGUF with the window, Q/K rows permuted as llama.cpp's converter
    writes them; ``reference`` gets the dequantized weights."""
    writer = gguf.GGUFWriter(path, "llama")
    _add_shape(writer, hf_model.config, 10000.0)
    writer.add_sliding_window(hf_model.config.sliding_window)
    add_tokenizer(writer, None)
    kind, state = gguf.GGMLQuantizationType.Q8_0, {}
    for name, tensor in hf_model.state_dict().items():
        value = tensor.float().numpy()
        if value.ndim == 2:
            blocks = gguf.quants.quantize(value, kind)
            value = gguf.quants.dequantize(blocks, kind).reshape(value.shape)
            stored = _permuted(name, blocks, hf_model.config)
            writer.add_tensor(_gguf_name(name), stored, raw_shape=stored.shape, raw_dtype=kind)
        else:
            writer.add_tensor(_gguf_name(name), np.ascontiguousarray(value))
        state[name] = torch.from_numpy(np.array(value))
    reference.load_state_dict(state)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _add_shape(writer: gguf.GGUFWriter, config, rope_base: float) -> None:
    for add, value in ((writer.add_block_count, config.num_hidden_layers),
                       (writer.add_context_length, config.max_position_embeddings),
                       (writer.add_embedding_length, config.hidden_size),
                       (writer.add_feed_forward_length, config.intermediate_size),
                       (writer.add_head_count, config.num_attention_heads),
                       (writer.add_head_count_kv, config.num_key_value_heads),
                       (writer.add_layer_norm_rms_eps, config.rms_norm_eps), (writer.add_rope_freq_base, rope_base)):
        add(value)


def _permuted(name: str, rows: np.ndarray, config) -> np.ndarray:
    """llama.cpp's converter order for Q/K rows (what the compiler undoes); whole rows, so blocks too."""
    heads = {"q_proj": config.num_attention_heads, "k_proj": config.num_key_value_heads}.get(name.split(".")[-2])
    if heads is None:
        return rows
    return rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


_GGUF_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.qkv_proj": "attn_qkv",
               "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
               "mlp.gate_up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
_GLOBAL_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                 "lm_head.weight": "output.weight"}


def _gguf_name(name: str) -> str:
    if name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[name]
    _, _, index, rest = name.split(".", 3)
    return f"blk.{index}.{_GGUF_NAMES[rest.removesuffix('.weight')]}.weight"
