"""What the decoder family tests share (Gemma 3, Qwen3, Qwen3-MoE, Phi-3, Mistral): a tiny
random transformers model saved as a Hugging Face folder with the SmolLM2 tokenizer (or written as
GGUF: the tokenizer and tensor parts of the writers), compiled with its fp32 tensors as they are,
and checked against transformers' own forward pass and greedy tokens, directly and through the
paged engine loop; and the native decode step checked against the torch modules."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import gguf
import numpy as np
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


def perturbed(model, scale: float = 0.3):
    """Random init leaves norms at 1 (Gemma's at 0): perturb them so that each one counts."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(torch.randn_like(param) * scale)
    return model.eval()


def add_tokenizer(writer: gguf.GGUFWriter, source: gguf.GGUFReader | None, pre: str = "default") -> None:
    """``source``'s tokenizer (add_tokenizer_of), or without one a byte-less gpt2-style vocabulary
    of placeholder tokens, enough for tests that run on token ids."""
    if source is not None:
        add_tokenizer_of(writer, source)
        return
    num_tokens = 49152
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list([f"t{i}" for i in range(num_tokens)])
    writer.add_token_types([int(gguf.TokenType.NORMAL)] * num_tokens)
    writer.add_token_merges([])
    writer.add_eos_token_id(2)


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


def write_gguf_tensors(writer: gguf.GGUFWriter, tensors: dict[str, np.ndarray], kind=gguf.GGMLQuantizationType.F32,
                       kept_f32: Callable[[str], bool] = lambda name: False) -> None:
    """Add ``tensors`` (GGUF name -> fp32 values), matrices in ``kind`` but those ``kept_f32``
    names, vectors in F32; then write the file and close it."""
    for name, value in tensors.items():
        value = np.ascontiguousarray(value, dtype=np.float32)
        if kind != gguf.GGMLQuantizationType.F32 and value.ndim >= 2 and not kept_f32(name):
            writer.add_tensor(name, gguf.quants.quantize(value, kind), raw_dtype=kind)
        else:
            writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def save_folder(hf_model, tokenizer_files, folder):
    """The model as a Hugging Face folder: safetensors, config.json and the SmolLM2 tokenizer."""
    hf_model.save_pretrained(folder, safe_serialization=True)
    for item in tokenizer_files.iterdir():
        shutil.copy(item, folder / item.name)
    return folder


def compiled_engine(source, out, **options) -> NativeEngine:
    """``source`` compiled with its fp32 tensors as they are, on an fp32 engine (``options``: more
    EngineOptions)."""
    compile_model(source, out, precision="source")
    return cpu_engine(out, **options)


def cpu_engine(path, **options) -> NativeEngine:
    """The ``.mcp`` at ``path`` on the CPU, fp32 unless ``options`` say otherwise."""
    with open_model(path, verify=True) as model_file:
        return NativeEngine(model_file, EngineOptions(**{"device": "cpu", "precision": "fp32", **options}))


def assert_matches(engine, hf_model, hf_greedy, ids=IDS, tolerance=1e-5, num_tokens: int = 16):
    """Logits over ``ids`` within ``tolerance`` (max |diff|) of transformers', and its
    ``num_tokens`` greedy tokens after the first 40 of them (or all, when fewer)."""
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([ids])).logits[0].float()
    ours = contiguous_decoder(engine).score(ids)
    assert theirs.abs().max() > 1e-2  # the random model says something
    assert (ours - theirs).abs().max().item() < tolerance
    params = SamplingParams(max_tokens=num_tokens, temperature=0.0, ignore_eos=True)
    generated = [step.token_id for step in contiguous_decoder(engine).generate(ids[:40], params)]
    assert generated == hf_greedy(hf_model, ids[:40], num_tokens)


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


def q8_0_engine(gguf_path, out) -> NativeEngine:
    """A Q8_0 GGUF compiled with the auto plan to ``out``, on ``native_step_engine``."""
    compile_model(gguf_path, out)
    return native_step_engine(out)


def native_step_engine(path) -> NativeEngine:
    """The ``.mcp`` at ``path`` (every matrix native, e.g. Q8_0) with exact dots, on the native
    decode step."""
    with open_model(path) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", decode_dots="exact"))
    assert engine.plan.decode_step == "native", engine.precision
    return engine


def assert_native_step_matches(engine: NativeEngine, prompts: list[list[int]], num_steps: int = 16,
                               block_size: int = 16, prefill_chunk: int = 8) -> None:
    """The native step against the torch modules on the same matrices, teacher-forced over each
    prompt's prefill in chunks of ``prefill_chunk`` (at most 16: the native step's rows) and
    ``num_steps`` decodes of every row together: logits within fp32 summation-order differences,
    and not the same path twice."""
    ours, theirs = (step_logits(engine, native, prompts, num_steps, block_size, prefill_chunk)
                    for native in (True, False))
    assert len(ours) == len(theirs) == sum(-(-len(p) // prefill_chunk) for p in prompts) + num_steps
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and (a - b).abs().max().item() < 2e-3
    assert max((a - b).abs().max().item() for a, b in zip(ours, theirs)) > 0


def step_logits(engine: NativeEngine, native: bool, prompts: list[list[int]], num_steps: int,
                block_size: int = 16, prefill_chunk: int = 8) -> list[torch.Tensor]:
    """Prefill each prompt in chunks of ``prefill_chunk``, then ``num_steps`` decode steps of every row together,
    each row fed the next token of its own IDS cycle; the logits of every step. A model with both
    windowed and global layers keeps its windowed KV in a pool of its own (kv/hybrid.py)."""
    from mcp.engine.kv.hybrid import HybridKVCacheManager
    from mcp.engine.kv.manager import KVCacheManager
    from mcp.engine.runner import ModelRunner, StepChunk, allocate_hybrid_storage, allocate_storage, releases_window

    model = engine.model
    if releases_window(model, block_size):
        storage = allocate_hybrid_storage(model, 1 << 22, block_size, torch.float32, 4, 8)
        local = KVCacheManager(storage.local.num_blocks, block_size, window_tokens=model.arch.sliding_window,
                               exact_window=True)
        kv = HybridKVCacheManager(KVCacheManager(storage.full.num_blocks, block_size), local)
    else:
        storage = allocate_storage(model, 1 << 22, block_size, torch.float32)
        kv = KVCacheManager(storage.num_blocks, block_size)
    runner = ModelRunner(model, storage, native_step=native, decode_max_rows=16)
    assert (runner.native_step is not None) == native

    def chunk(seq: str, ids: list[int], start: int) -> StepChunk:
        assert kv.allocate(seq, start + len(ids))
        local = kv.local_table(seq) if isinstance(kv, HybridKVCacheManager) else None
        return StepChunk(ids, start, kv.block_table(seq), True, local)

    def done(seq: str, tokens: list[int]) -> None:
        kv.commit(seq, tokens)
        if kv.trims:
            kv.trim(seq, len(tokens))

    logits, tokens = [], [[] for _ in prompts]
    for row, prompt in enumerate(prompts):
        kv.start(f"s{row}", prompt)
        for start in range(0, len(prompt), prefill_chunk):
            logits.append(runner.execute([chunk(f"s{row}", prompt[start:start + prefill_chunk], start)]))
            tokens[row] = prompt[:start + prefill_chunk]
            done(f"s{row}", tokens[row])
    for _ in range(num_steps):
        chunks = [chunk(f"s{row}", [IDS[(len(t) + row) % len(IDS)]], len(t)) for row, t in enumerate(tokens)]
        logits.append(runner.execute(chunks))
        for row, c in enumerate(chunks):
            tokens[row] = tokens[row] + list(c.token_ids)
            done(f"s{row}", tokens[row])
    return logits
