"""Phi-3 and Mistral (with its window) end to end: a tiny random model of each family, compiled,
generates through the SDK (``mcp.runtime.Session``), a real ``mcp2026 serve`` over HTTP and its
gRPC API; the SDK's greedy tokens are transformers' own, and the three give the same text.

The prompt (raw, ~50 tokens) runs past Mistral's window of 16 and past the Phi-3 model's original
context of 32 (its long LongRoPE factors) and its window of 24.
"""

from __future__ import annotations

import shutil
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

PROMPT = ("The river ran past the old mill, and the miller's daughter counted the boats that went by: "
          "one with red sails, one with white sails, and one that carried apples to the town market.")
NUM_TOKENS = 12
TINY = dict(vocab_size=49152, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)


def _phi3():
    from transformers import Phi3Config, Phi3ForCausalLM

    return Phi3ForCausalLM(Phi3Config(**TINY, pad_token_id=0, partial_rotary_factor=0.75, sliding_window=24,
                                      original_max_position_embeddings=32, rope_scaling={
                                          "type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3, 1.4, 1.5],
                                          "long_factor": [1.0, 2.0, 4.0, 6.0, 8.0, 12.0]}))


def _mistral():
    from transformers import MistralConfig, MistralForCausalLM

    return MistralForCausalLM(MistralConfig(**TINY, sliding_window=16))


FAMILIES = {"phi3": _phi3, "mistral": _mistral}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_generates_through_sdk_serve_and_grpc(family, smollm2_gguf, hf_greedy, start_server, tmp_path):
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    hf_model = FAMILIES[family]().eval()
    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name)
    folder = tmp_path / family
    hf_model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    compile_model(folder, tmp_path / f"{family}.mcp", precision="fp32")
    prompt_ids = tokenizer(PROMPT).input_ids
    assert len(prompt_ids) > 40
    greedy = {"max_tokens": NUM_TOKENS, "temperature": 0.0}

    with Session(RuntimeConfig(model_dir=tmp_path, device="cpu", precision="fp32")) as session:
        result = session.load_model(f"{family}.mcp").infer(PROMPT, raw=True, ignore_eos=True, **greedy)
    assert result.usage.prompt_tokens == len(prompt_ids)
    assert list(result.token_ids) == hf_greedy(hf_model, prompt_ids, NUM_TOKENS)

    grpc_port = _free_port()
    server = start_server({"runtime": {"device": "cpu", "precision": "fp32"},
                           "serving": {"models": [{"name": family, "source": str(tmp_path / f"{family}.mcp")}],
                                       "grpc": {"enabled": True, "port": grpc_port}}})
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
    over_http = client.completions.create(model=family, prompt=PROMPT, extra_body={"ignore_eos": True}, **greedy)
    assert over_http.choices[0].text == result.text and over_http.usage.completion_tokens == NUM_TOKENS
    stub = pb_grpc.InferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{grpc_port}"))
    over_grpc = stub.Infer(pb.InferRequest(model=family, prompt=PROMPT, sampling=pb.SamplingParams(
        max_tokens=NUM_TOKENS, temperature=0.0, ignore_eos=True)))
    assert over_grpc.text == result.text and over_grpc.usage.completion_tokens == NUM_TOKENS
    shutil.rmtree(folder)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
