"""Qwen3-MoE against transformers fp32: a tiny random Qwen3MoeForCausalLM, compiled from its HF
folder and from a GGUF written with the gguf package as llama.cpp lays one out ("qwen3moe",
experts stacked per projection).

Eight experts, two a token. The folder's model has a dense layer among the sparse ones
(``mlp_only_layers``) and top-k weights left unnormalised; the GGUF's is sparse throughout and
renormalised, as llama.cpp runs "qwen3moe". The paged engine loop (batched decode, prefix
caching) must give each sequence transformers' greedy tokens; with Q8_0 experts the experts run
the native kernels, and the whole step the native decode step (csrc/moe.inc), checked against the
torch modules and, through the engine loop, against transformers. A step runs each chosen expert
once, over all of its tokens.
"""

from __future__ import annotations

import gguf
import pytest
import torch
from gguf.quants import dequantize, quantize
from families import (IDS, assert_loop_matches, assert_matches, assert_native_step_matches, compiled_engine,
                      save_folder, tokenizer_files)
from qwen3_models import TINY, perturbed, write_gguf

from mcp.compiler.compiler import compile_model
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kernels import available as native_kernels_built
from mcp.engine.layers.linear import NativeLinear
from mcp.engine.layers.mlp import SwiGLU
from mcp.engine.layers.moe import SparseMoE
from mcp.modelfile.reader import open_model

__all__ = ["tokenizer_files"]  # a fixture
EXPERTS, TOP_K = 8, 2
Q8_0 = gguf.GGMLQuantizationType.Q8_0


def _hf_model(**moe):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    torch.manual_seed(0)
    config = Qwen3MoeConfig(**{**TINY, "num_hidden_layers": 3}, moe_intermediate_size=32, num_experts=EXPERTS,
                            num_experts_per_tok=TOP_K, tie_word_embeddings=False, **moe)
    return perturbed(Qwen3MoeForCausalLM(config))


@pytest.fixture(scope="module")
def hf_model():
    return _hf_model(norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[1])


@pytest.fixture(scope="module")
def hf_folder(hf_model, tokenizer_files, tmp_path_factory):
    return save_folder(hf_model, tokenizer_files, tmp_path_factory.mktemp("qwen3moe-hf"))


@pytest.fixture(scope="module")
def engine(hf_folder):
    return compiled_engine(hf_folder, hf_folder / "tiny.mcp")


def test_hf_folder_compiles_to_qwen3_moe_with_its_experts(engine, hf_folder):
    from mcp.modelfile.inspect import describe

    arch = engine.header.architecture
    assert (arch.architecture, arch.num_experts, arch.num_experts_per_tok, arch.moe_intermediate_size) == \
        ("qwen3_moe", EXPERTS, TOP_K, 32)
    assert (arch.norm_topk_prob, arch.decoder_sparse_step, arch.mlp_only_layers) == (False, 1, (1,))
    assert [type(layer.mlp) for layer in engine.model.layers] == [SparseMoE, SwiGLU, SparseMoE]
    with open_model(hf_folder / "tiny.mcp") as model_file:
        text = describe(model_file, show_plan=False, show_tensors=False)
    assert "experts          8 of FFN size 32, 2 a token (softmax weights as they are), in 2 of 3 layers" in text


def test_hf_folder_matches_transformers(engine, hf_model, hf_greedy):
    assert_matches(engine, hf_model, hf_greedy)


def test_engine_loop_batches_and_reuses_prefixes_with_transformers_tokens(engine, hf_model, hf_greedy):
    assert_loop_matches(engine, hf_model, hf_greedy)


def test_gguf_matches_transformers(hf_greedy, tmp_path):
    hf_model = _hf_model(norm_topk_prob=True)
    path = tmp_path / "tiny-qwen3moe.gguf"
    write_gguf(hf_model, path, "qwen3moe")
    engine = compiled_engine(path, tmp_path / "tiny.mcp")
    arch = engine.header.architecture
    assert (arch.architecture, arch.variant, arch.num_experts, arch.norm_topk_prob, arch.mlp_only_layers) == \
        ("qwen3_moe", "qwen3moe", EXPERTS, True, ())
    assert_matches(engine, hf_model, hf_greedy)


@pytest.mark.skipif(not native_kernels_built(), reason="the native kernels are not built: `pip install -e .` (or `make install`) compiles them")
def test_q8_0_experts_run_the_native_kernels_as_transformers_on_their_values(hf_greedy, tmp_path):
    """Matrices stored as Q8_0 blocks (the router kept F32, as llama.cpp keeps it) compile as
    grouped int8 and run the native kernels with exact dots; transformers, holding the same
    dequantized values, is the reference. 32 tokens: every call stays on the decode kernels."""
    hf_model = _hf_model(norm_topk_prob=True)
    path = tmp_path / "q8.gguf"
    write_gguf(hf_model, path, "qwen3moe", Q8_0)
    compile_model(path, tmp_path / "q8.mcp")  # auto: Q8_0 matrices as grouped int8
    with open_model(tmp_path / "q8.mcp", verify=True) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", decode_dots="exact"))
    assert engine.plan.by_tensor["model.layers.0.mlp.gate.weight"].decode == "dense-fp32"  # the F32 router
    experts = [expert for layer in engine.model.layers for expert in layer.mlp.experts]
    assert len(experts) == 3 * EXPERTS
    assert all(isinstance(p, NativeLinear) for e in experts for p in (*e.gate_up_proj.parts, e.down_proj))
    as_stored(hf_model)
    assert_matches(engine, hf_model, hf_greedy, ids=IDS[:32])


def as_stored(hf_model) -> None:
    """transformers' matrices replaced by their Q8_0 values (each row's blocks quantized and back),
    the router's excepted."""
    with torch.no_grad():
        for name, param in hf_model.named_parameters():
            if param.ndim >= 2 and not name.endswith("mlp.gate.weight"):
                values = dequantize(quantize(param.numpy(), Q8_0), Q8_0).reshape(param.shape)
                param.copy_(torch.from_numpy(values))


def _q8_0_engine(hf_model, tmp_path) -> NativeEngine:
    """``hf_model`` as a Q8_0 qwen3moe GGUF (the router F32), compiled as auto does, with exact dots."""
    write_gguf(hf_model, tmp_path / "q8.gguf", "qwen3moe", Q8_0)
    compile_model(tmp_path / "q8.gguf", tmp_path / "q8.mcp")
    with open_model(tmp_path / "q8.mcp", verify=True) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", decode_dots="exact"))


@pytest.mark.skipif(not native_kernels_built(), reason="the native kernels are not built: `pip install -e .` (or `make install`) compiles them")
@pytest.mark.parametrize("moe, mlps", [
    ({"norm_topk_prob": True, "mlp_only_layers": [1]}, [SparseMoE, SwiGLU, SparseMoE]),
    ({"norm_topk_prob": False}, [SparseMoE] * 3),
], ids=["renormalised-with-a-dense-layer", "softmax-weights-as-they-are"])
def test_native_step_matches_the_torch_modules(moe, mlps, tmp_path):
    """A Q8_0 GGUF (experts on the native kernels, exact dots, the router F32): the native step's
    router, top-k and weights as the file says, and a dense layer among the sparse ones, against
    the torch modules over three prefills (the 13-token one on the native step: up to 13 rows an
    expert) and 16 batched decodes, teacher-forced; logits within fp32 summation-order differences."""
    engine = _q8_0_engine(_hf_model(**moe), tmp_path)
    assert engine.header.architecture.norm_topk_prob == moe["norm_topk_prob"]
    assert [type(layer.mlp) for layer in engine.model.layers] == mlps
    assert engine.plan.decode_step == "native", engine.precision
    assert_native_step_matches(engine, [IDS[:40], IDS[60:73], IDS[10:39]], prefill_chunk=16)


@pytest.mark.skipif(not native_kernels_built(), reason="the native kernels are not built: `pip install -e .` (or `make install`) compiles them")
def test_engine_loop_on_the_native_step_gives_transformers_tokens(hf_greedy, tmp_path):
    """Batched decode of several sequences (one reusing another's prefix) through the engine loop,
    every short step on the native step, gives transformers' greedy tokens on the Q8_0 values."""
    hf_model = _hf_model(norm_topk_prob=True, mlp_only_layers=[1])
    engine = _q8_0_engine(hf_model, tmp_path)
    as_stored(hf_model)
    assert assert_loop_matches(engine, hf_model, hf_greedy) is not None  # the loop's runner ran the native step


@pytest.mark.skipif(not native_kernels_built(), reason="the native kernels are not built: `pip install -e .` (or `make install`) compiles them")
def test_the_native_step_refuses_a_router_it_does_not_read(tmp_path):
    """The step reads a router as its fp32 matrix: a bf16 one sends the model to the torch modules."""
    from mcp.engine.layers.linear import Linear
    from mcp.engine.models.llama_step import unsupported
    from mcp.engine.runner import allocate_storage

    engine = _q8_0_engine(_hf_model(norm_topk_prob=True), tmp_path)
    storage = allocate_storage(engine.model, 1 << 20, 16, torch.float32)
    assert unsupported(engine.model, storage) == ""
    moe = engine.model.layers[2].mlp
    moe.router = Linear(moe.router.weight.to(torch.bfloat16))
    assert unsupported(engine.model, storage) == "layer 2's router is not a dense fp32 matrix without a bias"


def test_a_step_runs_each_chosen_expert_once_over_its_tokens(engine):
    """The (token, expert) pairs of a 24-token batch grouped by expert: each expert with any pair
    is called once (forward hooks count the calls), the others never, and the sum equals each
    token's own top-k mixture computed token by token."""
    moe = engine.model.layers[0].mlp
    calls = [0] * EXPERTS
    hooks = [expert.register_forward_hook(lambda *_, e=e: calls.__setitem__(e, calls[e] + 1))
             for e, expert in enumerate(moe.experts)]
    torch.manual_seed(3)
    x = torch.randn(1, 24, 64)
    try:
        with torch.inference_mode():
            out = moe(x)
    finally:
        for hook in hooks:
            hook.remove()
    weights, chosen = moe.route(x[0])
    active = set(chosen.flatten().tolist())
    assert calls == [1 if e in active else 0 for e in range(EXPERTS)]
    with torch.inference_mode():
        expected = torch.stack([sum(w * moe.experts[e](token[None])[0] for w, e in zip(ws, es.tolist()))
                                for token, ws, es in zip(x[0], weights, chosen)])
    assert (out[0] - expected).abs().max().item() < 1e-6



def test_stacked_bf16_experts_split_into_each_experts_exact_matrices(tmp_path):
    """A GGUF's stacked BF16 experts (raw bytes to the reader) become one matrix per expert, each
    exactly its slice of transformers' stacked parameters."""
    hf_model = _hf_model(norm_topk_prob=True)
    write_gguf(hf_model, tmp_path / "bf16.gguf", "qwen3moe", gguf.GGMLQuantizationType.BF16)
    compile_model(tmp_path / "bf16.gguf", tmp_path / "bf16.mcp", precision="source")
    state, inner = hf_model.state_dict(), 32
    with open_model(tmp_path / "bf16.mcp", verify=True) as model_file:
        assert model_file.header.tensor("model.layers.2.mlp.gate.weight").encoding == "f32"  # the router
        for expert in range(EXPERTS):
            prefix = f"model.layers.2.mlp.experts.{expert}"
            gate_up = state["model.layers.2.mlp.experts.gate_up_proj"][expert].to(torch.bfloat16)
            assert torch.equal(model_file.tensor(f"{prefix}.gate_proj.weight"), gate_up[:inner])
            assert torch.equal(model_file.tensor(f"{prefix}.up_proj.weight"), gate_up[inner:])
            down = state["model.layers.2.mlp.experts.down_proj"][expert].to(torch.bfloat16)
            assert torch.equal(model_file.tensor(f"{prefix}.down_proj.weight"), down)
