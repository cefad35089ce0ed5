"""What the decoder family tests share (Gemma 3, Qwen3, Qwen3-MoE, Phi-3, Mistral): a tiny
random transformers model saved as a Hugging Face folder with the SmolLM2 tokenizer, compiled with
its fp32 tensors as they are, and checked against transformers' own forward pass and greedy tokens,
directly and through the paged engine loop."""

from __future__ import annotations

import shutil

import gguf
import pytest
import torch

from mcp.compiler.compiler import compile_model
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

IDS = [504, 3575, 282, 4649, 314, 28, 1073, 253, 1345, 30, 76, 355] * 6  # 72 tokens
LOOP_PROMPTS = [IDS[:40], IDS[5:23], IDS[:3], IDS[:40] + [77, 78, 79]]  # the last shares two blocks


@pytest.fixture(scope="module")
def tokenizer_files(smollm2_gguf, tmp_path_factory):
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tokenizer")
    AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name).save_pretrained(folder)
    return folder


def add_tokenizer_of(writer: gguf.GGUFWriter, source: gguf.GGUFReader) -> None:
    """Write ``source``'s tokenizer (SmolLM2's: its 49,152 tokens, merges and chat template) into
    ``writer``, so that a tiny model of that vocabulary reads real text, as a user's file would."""
    def value(key):
        return source.fields[key].contents()

    writer.add_tokenizer_model(value("tokenizer.ggml.model"))
    writer.add_tokenizer_pre(value("tokenizer.ggml.pre"))
    writer.add_token_list(value("tokenizer.ggml.tokens"))
    writer.add_token_types(value("tokenizer.ggml.token_type"))
    writer.add_token_merges(value("tokenizer.ggml.merges"))
    writer.add_bos_token_id(value("tokenizer.ggml.bos_token_id"))
    writer.add_eos_token_id(value("tokenizer.ggml.eos_token_id"))
    writer.add_chat_template(value("tokenizer.chat_template"))


def save_folder(hf_model, tokenizer_files, folder):
    """The model as a Hugging Face folder: safetensors, config.json and the SmolLM2 tokenizer."""
    hf_model.save_pretrained(folder, safe_serialization=True)
    for item in tokenizer_files.iterdir():
        shutil.copy(item, folder / item.name)
    return folder


def compiled_engine(source, out) -> NativeEngine:
    compile_model(source, out, precision="source")  # fp32 tensors as they are
    with open_model(out, verify=True) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))


def assert_matches(engine, hf_model, hf_greedy, ids=IDS, tolerance=1e-5):
    """Logits over ``ids`` within ``tolerance`` (max |diff|) of transformers', and its 16 greedy
    tokens after the first 40 of them."""
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([ids])).logits[0].float()
    ours = contiguous_decoder(engine).score(ids)
    assert theirs.abs().max() > 1e-2  # the random model says something
    assert (ours - theirs).abs().max().item() < tolerance
    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    generated = [step.token_id for step in contiguous_decoder(engine).generate(ids[:40], params)]
    assert generated == hf_greedy(hf_model, ids[:40], 16)


def assert_native_step_matches_torch(engine, prompts, num_decodes: int = 16, prefill_chunk: int | None = None,
                                     decode_id=lambda step, row: (7 * step + row) % 200 + 3,
                                     tolerance: float = 2e-3) -> None:
    """The native decode step against the torch modules on ``engine``'s model, teacher-forced:
    each prompt's prefill in one call, or in calls of ``prefill_chunk`` tokens (on the native step
    where a call fits 16 rows), then ``num_decodes`` steps decoding every sequence in one batch
    (row ``row`` of step ``step`` takes ``decode_id(step, row)``); logits within ``tolerance`` (fp32
    summation-order differences), and not all equal (the native step did run)."""
    from mcp.engine.runner import ModelRunner, allocate_storage

    runs = []
    for native in (True, False):
        runner = ModelRunner(engine.model, allocate_storage(engine.model, 1 << 22, 16, torch.float32),
                             native_step=native, decode_max_rows=16)
        assert (runner.native_step is not None) == native
        runs.append(_teacher_forced_logits(runner, prompts, num_decodes, prefill_chunk, decode_id))
    for ours, theirs in zip(*runs):
        assert ours.shape == theirs.shape and (ours - theirs).abs().max().item() < tolerance
    assert max((a - b).abs().max().item() for a, b in zip(*runs)) > 0


def _teacher_forced_logits(runner, prompts, num_decodes, prefill_chunk, decode_id) -> list[torch.Tensor]:
    from mcp.engine.kv.manager import KVCacheManager
    from mcp.engine.runner import StepChunk

    kv, logits = KVCacheManager(runner.storage.num_blocks, 16), []
    for row, prompt in enumerate(prompts):  # prompts one by one
        kv.start(f"s{row}", prompt)
        size = prefill_chunk or len(prompt)
        for start in range(0, len(prompt), size):
            assert kv.allocate(f"s{row}", start + len(prompt[start:start + size]))
            logits.append(runner.execute([StepChunk(prompt[start:start + size], start, kv.block_table(f"s{row}"),
                                                    True)]))
    lengths = [len(prompt) for prompt in prompts]
    for step in range(num_decodes):  # decodes together
        chunks = []
        for row in range(len(prompts)):
            assert kv.allocate(f"s{row}", lengths[row] + 1)
            chunks.append(StepChunk([decode_id(step, row)], lengths[row], kv.block_table(f"s{row}"), True))
            lengths[row] += 1
        logits.append(runner.execute(chunks))
    return logits


def assert_loop_matches(engine, hf_model, hf_greedy, prompts=LOOP_PROMPTS, num_tokens: int = 12):
    """The paged engine loop: the prompts decoding in one batch, the last reusing the first's
    cached prefix (two blocks), each with transformers' greedy tokens. Returns the loop's native
    step (None: it stepped on the torch modules)."""
    params = SamplingParams(max_tokens=num_tokens, temperature=0.0, ignore_eos=True)
    loop = EngineLoop(engine, LoopConfig(kv_cache_bytes=1 << 22, enable_prefix_caching=True))
    try:
        first = loop.submit(prompts[0], params)
        assert [s.token_id for s in first] == hf_greedy(hf_model, prompts[0], num_tokens)
        handles = [loop.submit(ids, params) for ids in prompts[1:]]
        assert [[s.token_id for s in h] for h in handles] == [hf_greedy(hf_model, ids, num_tokens)
                                                              for ids in prompts[1:]]
        assert handles[-1].outcome.num_cached_tokens == 32
        assert loop.stats().max_sequences_in_step >= 2
        return loop.runner.native_step
    finally:
        loop.close()
