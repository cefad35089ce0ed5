"""``scheduler.kv_cache_dtype: f16`` through the SDK on the default model's own plan (Q4_1
blocks, the native step): the loop's cache holds halves, twice the blocks for one budget,
and greedy decoding gives the fp32 cache's tokens."""

from __future__ import annotations

import pytest
import torch

from mcp.base.errors import ConfigError
from mcp.config.runtime import RuntimeConfig
from mcp.engine.loop_config import LoopConfig
from mcp.runtime import Session

KV_BYTES = 128 * 16 * 46080  # 128 blocks of 16 tokens for SmolLM2 in fp32, 256 in halves
# Prompts whose greedy continuations on the fp32 cache have no near-tie in their first 24
# tokens (on others a half's rounding may tip a tie, and the texts part there).
PROMPTS = ["Explain quantum entanglement in simple terms.", "Name three colours.",
           "What is the tallest mountain on Earth?"]


def _tokens(smollm2_auto_mcp, kv_cache_dtype: str) -> tuple[torch.dtype, int, list[tuple[int, ...]]]:
    config = RuntimeConfig(model_dir=smollm2_auto_mcp.parent, device="cpu",
                           scheduler=LoopConfig(kv_cache_bytes=KV_BYTES, kv_cache_dtype=kv_cache_dtype))
    with Session(config) as session:
        model = session.load_model(smollm2_auto_mcp.name)
        assert model.engine.plan.decode_step == "native"
        tokens = [model.infer(text, temperature=0.0, max_tokens=24).token_ids for text in PROMPTS]
        return model.loop.storage.dtype, model.loop.storage.num_blocks, tokens


def test_a_cache_of_halves_holds_twice_the_blocks_and_decodes_the_fp32_caches_tokens(smollm2_auto_mcp):
    full_dtype, full_blocks, full = _tokens(smollm2_auto_mcp, "auto")
    half_dtype, half_blocks, halves = _tokens(smollm2_auto_mcp, "f16")
    assert (full_dtype, full_blocks) == (torch.float32, 128)
    assert (half_dtype, half_blocks) == (torch.float16, 256)
    assert all(len(tokens) == 24 for tokens in full)
    assert halves == full


def test_an_unknown_kv_cache_dtype_is_refused():
    with pytest.raises(ConfigError, match="scheduler.kv_cache_dtype must be one of auto, fp32, f16, got 'int8'"):
        LoopConfig(kv_cache_dtype="int8")
