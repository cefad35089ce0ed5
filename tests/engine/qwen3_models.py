"""Tiny random Qwen3 / Qwen3-MoE models for the tests: built with transformers, saved as Hugging
Face folders (with the SmolLM2 tokenizer) or written as GGUF with the gguf package as llama.cpp's
converter lays one out; the rest (compile, checks against transformers) is families.py's."""

from __future__ import annotations

import gguf
import numpy as np
from families import add_tokenizer, perturbed, write_gguf_tensors

__all__ = ["TINY", "gguf_tensors", "perturbed", "write_gguf"]  # perturbed: families', taken from here too


LAYERS, VOCAB = 3, 49152
TINY = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
            num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
            rms_norm_eps=1e-6, rope_theta=1e6, bos_token_id=1, eos_token_id=2)


_GGUF_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
               "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
               "mlp.gate": "ffn_gate_inp"}
_GLOBAL_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                 "lm_head.weight": "output.weight"}


def write_gguf(hf_model, path, arch: str, tensor_type=gguf.GGMLQuantizationType.F32,
               tokenizer: gguf.GGUFReader | None = None) -> None:
    """The model as llama.cpp's converter writes a Qwen3 / Qwen3-MoE GGUF: Q/K rows as they are,
    experts stacked per projection [experts, rows, cols], a byte-level BPE vocabulary of VOCAB
    tokens (``tokenizer``: that file's, families.add_tokenizer_of); matrices (not the router) in
    ``tensor_type``, vectors in F32."""
    config = hf_model.config
    writer = gguf.GGUFWriter(path, arch)
    for add, value in ((writer.add_block_count, config.num_hidden_layers), (writer.add_context_length, 256),
                       (writer.add_embedding_length, config.hidden_size),
                       (writer.add_feed_forward_length, config.intermediate_size),
                       (writer.add_head_count, config.num_attention_heads),
                       (writer.add_head_count_kv, config.num_key_value_heads), (writer.add_key_length, config.head_dim),
                       (writer.add_value_length, config.head_dim), (writer.add_layer_norm_rms_eps, config.rms_norm_eps),
                       (writer.add_rope_freq_base, 1e6)):
        add(value)
    if arch == "qwen3moe":
        writer.add_expert_count(config.num_experts)
        writer.add_expert_used_count(config.num_experts_per_tok)
        writer.add_expert_feed_forward_length(config.moe_intermediate_size)
        if not config.norm_topk_prob:  # llama.cpp renormalises unless told not to
            writer.add_expert_weights_norm(False)
    add_tokenizer(writer, tokenizer, pre="qwen2")
    write_gguf_tensors(writer, gguf_tensors(hf_model), tensor_type, kept_f32=lambda name: "ffn_gate_inp" in name)


def gguf_tensors(hf_model) -> dict[str, np.ndarray]:
    """GGUF name -> fp32 values, numpy order. transformers holds each layer's experts stacked,
    ``mlp.experts.gate_up_proj`` [experts, 2 moe_ffn, hidden] and ``mlp.experts.down_proj``: the
    GGUF stacks gate, up and down apart."""
    tensors: dict[str, np.ndarray] = {}
    for name, tensor in hf_model.state_dict().items():
        value = np.ascontiguousarray(tensor.float().numpy(), dtype=np.float32)
        if name == "lm_head.weight" and hf_model.config.tie_word_embeddings:
            continue
        if name in _GLOBAL_NAMES:
            tensors[_GLOBAL_NAMES[name]] = value
            continue
        _, _, index, rest = name.split(".", 3)
        if rest == "mlp.experts.gate_up_proj":
            gate, up = np.split(value, 2, axis=1)
            tensors[f"blk.{index}.ffn_gate_exps.weight"] = np.ascontiguousarray(gate)
            tensors[f"blk.{index}.ffn_up_exps.weight"] = np.ascontiguousarray(up)
        elif rest == "mlp.experts.down_proj":
            tensors[f"blk.{index}.ffn_down_exps.weight"] = value
        else:
            tensors[f"blk.{index}.{_GGUF_NAMES[rest.removesuffix('.weight')]}.weight"] = value
    return tensors
