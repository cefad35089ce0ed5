"""Phi-3, Mistral (with its window) and Gemma 3 (windowed layers among global ones) end to end: a
tiny random model of each family, compiled,
generates through the SDK (``mcp.runtime.Session``), a real ``mcp2026 serve`` over HTTP and its
gRPC API; the SDK's greedy tokens are transformers' own, and the three give the same text.

The prompt (raw, ~50 tokens) runs past Mistral's and Gemma 3's window of 16 and past the Phi-3
model's original context of 32 (its long LongRoPE factors) and its window of 24.
"""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import grpc
import openai
import pytest

from mcp.compiler.compiler import compile_model
from mcp.config.runtime import RuntimeConfig
from mcp.runtime import Session
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).parents[1] / "engine"))
from decoder_models import tiny_gemma3, tiny_mistral, tiny_phi3  # noqa: E402

PROMPT = ("The river ran past the old mill, and the miller's daughter counted the boats that went by: "
          "one with red sails, one with white sails, and one that carried apples to the town market.")
NUM_TOKENS = 12
FAMILIES = {"phi3": lambda: tiny_phi3(longrope=True, original=32, window=24), "mistral": lambda: tiny_mistral(16),
            "gemma3": lambda: tiny_gemma3(48, window=16)}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_generates_through_sdk_serve_and_grpc(family, smollm2_gguf, hf_greedy, start_server, tmp_path):
    from transformers import AutoTokenizer

    hf_model = FAMILIES[family]()
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
