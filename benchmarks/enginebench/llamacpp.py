"""llama.cpp through llama-cpp-python: ``Llama`` for one sequence, its low-level batch API
(one context, one seq_id per sequence) for the batched figures.

Timed here with perf_counter around each call (llama-cpp-python's own prefill timer is
unreliable). Logits are read with ``get_logits_ith``/``llama_get_logits``: ``Llama.scores``
stays zero unless ``logits_all=True``, which would copy every position's logits.
"""

from __future__ import annotations

import contextlib
import gc

from enginebench.measure import drop_from_page_cache, log, memory_mib, now, repeat, wall
from enginebench.spec import DECODE_PROMPTS, WorkerSpec

METHODS = {
    "pp": "wall time of tokenize + Llama.eval(prompt) + argmax of the last logits",
    "decode": "eval one token + argmax, timed from the first token to the last",
    "batch": "low-level llama_decode, one seq_id per sequence: all tokens / wall time (prefill included)",
    "ttft": "wall time of tokenize(rendered chat prompt) + eval + argmax",
    "load": "Llama(model_path, ...) (model + context)",
}


def measure(spec: WorkerSpec) -> dict:
    result = {"figures": {}, "info": {}, "notes": [], "methods": dict(METHODS)}
    import llama_cpp
    import numpy

    result["figures"]["rss_imports_mib"] = [memory_mib()["rss"]]
    result["info"]["resident_after_drop"] = drop_from_page_cache(spec.gguf_path)
    started = now()
    llm = _load(spec)
    result["figures"]["load_cold_ms"] = [(now() - started) * 1000]
    if spec.cold_only:
        return result
    result["info"]["weight_bytes"] = llama_cpp.llama_model_size(llm._model.model)
    result["info"]["system"] = llama_cpp.llama_print_system_info().decode()
    _measure_single(llm, spec, result, numpy)
    result["figures"]["rss_peak_b1_mib"] = [memory_mib()["peak"]]
    _measure_batches(llm, spec, result, llama_cpp, numpy)
    result["figures"]["rss_peak_mib"] = [memory_mib()["peak"]]
    result["figures"]["load_warm_ms"] = _warm_loads(llm, spec)
    return result


def _load(spec: WorkerSpec):
    context = spec.settings.prompt_tokens + spec.settings.decode_tokens + 64
    return load(spec.gguf_path, context, spec.threads, spec.options.get("use_extra_bufts", True))


def load(gguf_path: str, context: int, threads: int, use_extra_bufts: bool = True):
    """``Llama`` on ``gguf_path`` with room for ``context`` tokens, ``threads`` threads."""
    from llama_cpp import Llama

    with _model_params(use_extra_bufts=use_extra_bufts):
        return Llama(model_path=gguf_path, n_ctx=max(512, context), n_batch=512,
                     n_threads=threads, n_threads_batch=threads, verbose=False)


@contextlib.contextmanager
def _model_params(use_extra_bufts: bool):
    """``Llama`` has no argument for ``use_extra_bufts``; patch its default-params call.

    ggml's AMX matmul (an "extra buffer type") segfaults on some AMX machines
    (ggml-org/llama.cpp#20824); the parent retries with it off when that happens.
    """
    import llama_cpp.llama_cpp as capi

    original = capi.llama_model_default_params

    def params():
        value = original()
        value.use_extra_bufts = use_extra_bufts
        return value

    capi.llama_model_default_params = params
    try:
        yield
    finally:
        capi.llama_model_default_params = original


def _measure_single(llm, spec: WorkerSpec, result: dict, numpy) -> None:
    settings, figures, info = spec.settings, result["figures"], result["info"]

    def first_token(text: str, special: bool) -> int:
        return _first_token(llm, text, special, numpy)

    info["pp_tokens"] = len(llm.tokenize(spec.pp_text.encode(), add_bos=False))
    figures["pp_tps"] = repeat(settings.runs, lambda: info["pp_tokens"] / wall(lambda: first_token(spec.pp_text, False)))
    log("llamacpp", f"prompt processing {info['pp_tokens']} tokens: {figures['pp_tps']}")
    figures["decode1_tps"] = repeat(settings.runs, lambda: decode_tps(llm, DECODE_PROMPTS[0], settings.decode_tokens, numpy))
    log("llamacpp", f"decode batch 1: {figures['decode1_tps']}")
    info["chat_tokens"] = len(llm.tokenize(spec.chat_text.encode(), add_bos=False, special=True))
    figures["ttft_ms"] = repeat(settings.runs, lambda: 1000 * wall(lambda: first_token(spec.chat_text, True)))
    log("llamacpp", f"TTFT {info['chat_tokens']} tokens: {figures['ttft_ms']}")


def _first_token(llm, text: str, special: bool, numpy) -> int:
    """Prefill ``text`` from an empty cache; the greedy next token."""
    ids = llm.tokenize(text.encode(), add_bos=False, special=special)
    llm.reset()  # no reuse of the previous call's KV cache
    llm.eval(ids)
    return int(numpy.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).argmax())


def decode_tps(llm, prompt: str, tokens: int, numpy) -> float:
    """One greedy decode of ``tokens`` tokens after ``prompt``: tok/s from the first token to the last."""
    token = _first_token(llm, prompt, False, numpy)
    vocab = llm.n_vocab()
    started = now()
    for _ in range(tokens - 1):
        llm.eval([token])
        token = int(numpy.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(vocab,)).argmax())
    return (tokens - 1) / (now() - started)


def _measure_batches(llm, spec: WorkerSpec, result: dict, llama_cpp, numpy) -> None:
    from llama_cpp import _internals

    settings = spec.settings
    largest = max(settings.batch_sizes)
    prompts = [llm.tokenize(p.encode(), add_bos=False) for p in DECODE_PROMPTS[:largest]]
    params = llama_cpp.llama_context_default_params()
    for name, _ in llama_cpp.llama_context_params._fields_:
        setattr(params, name, getattr(llm.context_params, name))
    # llama.cpp pads each sequence's share of the context to a multiple of 256.
    per_sequence = -(-(max(len(p) for p in prompts) + settings.batch_tokens) // 256) * 256
    # One KV stream per sequence: a unified cache made batch 32 ~10x slower here (each token
    # attends over every sequence's cells, masked).
    params.n_seq_max, params.n_ctx, params.kv_unified = largest, largest * per_sequence, False
    params.n_batch = params.n_ubatch = max(512, sum(len(p) for p in prompts))
    context = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
    batch = _internals.LlamaBatch(n_tokens=params.n_batch, embd=0, n_seq_max=1, verbose=False)
    for size in settings.batch_sizes:
        def batch_once(size=size) -> float:
            started = now()
            count = _decode_batch(context, batch, prompts[:size], settings.batch_tokens, llm.n_vocab(), llama_cpp, numpy)
            return count / (now() - started)

        result["figures"][f"decode_b{size}_tps"] = repeat(settings.runs, batch_once)
        log("llamacpp", f"aggregate decode batch {size}: {result['figures'][f'decode_b{size}_tps']}")
    context.close()
    batch.close()


def _decode_batch(context, batch, prompts, num_tokens, vocab, llama_cpp, numpy) -> int:
    """Greedy-decode ``num_tokens`` for every prompt, all sequences in each llama_decode."""
    context.kv_cache_clear()
    batch.reset()
    for seq_id, ids in enumerate(prompts):
        batch.add_sequence(ids, seq_id, False)  # logits for each sequence's last token only
    size = len(prompts)
    positions = [len(ids) for ids in prompts]
    generated = 0
    raw = batch.batch
    for step in range(num_tokens):
        context.decode(batch)
        logits = numpy.ctypeslib.as_array(llama_cpp.llama_get_logits(context.ctx), shape=(size, vocab))
        tokens = logits.argmax(axis=1).tolist()  # [B]: rows in the order the batch asked for them
        generated += size
        if step == num_tokens - 1:
            break
        raw.n_tokens = size
        for i, token in enumerate(tokens):
            raw.token[i], raw.pos[i], raw.n_seq_id[i], raw.logits[i] = token, positions[i], 1, True
            raw.seq_id[i][0] = i
            positions[i] += 1
    return generated


def _warm_loads(llm, spec: WorkerSpec) -> list[float]:
    times = []
    for _ in range(spec.settings.runs):
        llm.close()
        del llm
        gc.collect()
        started = now()
        llm = _load(spec)
        times.append((now() - started) * 1000)
    llm.close()
    return times
