"""Qwen3 and Qwen3-MoE end to end: a tiny random model of each family, compiled as ``mcp2026
pull`` compiles (``auto``), generates the same greedy text through the SDK (``mcp.runtime``), a
real ``mcp2026 serve`` over HTTP (each model in its sandboxed worker) and the same server's gRPC API.
"""

from __future__ import annotations

import socket

import grpc
import openai
import pytest
import torch

from mcp.compiler.compiler import compile_model
from mcp.config.runtime import RuntimeConfig
from mcp.runtime import Session
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc

PROMPT = "The capital of France is"
TINY = dict(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, max_position_embeddings=256, bos_token_id=1, eos_token_id=2)


def _hf_model(family: str):
    from transformers import Qwen3Config, Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

    torch.manual_seed(0)
    if family == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(**TINY, tie_word_embeddings=True))
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**TINY, moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2,
                                              norm_topk_prob=True, tie_word_embeddings=False))


@pytest.fixture(scope="module")
def models(smollm2_gguf, tmp_path_factory) -> dict:
    """family -> the tiny model's .mcp, from a Hugging Face folder with the SmolLM2 tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name)
    compiled = {}
    for family in ("qwen3", "qwen3_moe"):
        folder = tmp_path_factory.mktemp(family)
        _hf_model(family).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        compiled[family] = folder / f"{family}.mcp"
        compile_model(folder, compiled[family], name=family)
    return compiled


@pytest.fixture(scope="module")
def grpc_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(start_server, models, grpc_port):
    return start_server({"runtime": {"device": "cpu", "num_threads": 1},
                         "serving": {"models": [{"name": family, "source": str(path)} for family, path in models.items()],
                                     "grpc": {"enabled": True, "port": grpc_port}}})


@pytest.mark.parametrize("family", ["qwen3", "qwen3_moe"])
def test_the_sdk_serve_and_grpc_give_one_greedy_text(family, models, server, grpc_port):
    with Session(RuntimeConfig(device="cpu", num_threads=1)) as session:
        model = session.load_model(models[family])
        assert model.header.architecture.architecture == family and model.backend == "native"
        expected = model.infer(prompt=PROMPT, max_tokens=8, temperature=0.0, ignore_eos=True, raw=True)
    assert expected.usage.completion_tokens == 8 and expected.text

    http = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
    over_http = http.completions.create(model=family, prompt=PROMPT, max_tokens=8, temperature=0.0,
                                        extra_body={"ignore_eos": True})
    assert over_http.choices[0].text == expected.text

    stub = pb_grpc.InferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{grpc_port}"))
    over_grpc = stub.Infer(pb.InferRequest(model=family, prompt=PROMPT, sampling=pb.SamplingParams(
        max_tokens=8, temperature=0.0, ignore_eos=True)))
    assert over_grpc.text == expected.text and over_grpc.usage.completion_tokens == 8
