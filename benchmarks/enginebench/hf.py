"""Hugging Face transformers loading the same GGUF (dequantized to fp32), ``generate`` greedy."""

from __future__ import annotations

import gc
from pathlib import Path

from enginebench.measure import drop_from_page_cache, log, memory_mib, now, repeat, wall
from enginebench.spec import CHAT_MESSAGES, DECODE_PROMPTS, WorkerSpec

METHODS = {
    "pp": "wall time of tokenize + generate(max_new_tokens=1)",
    "decode": "generate(max_new_tokens=N, min_new_tokens=N), a streamer stamps each token: first to last",
    "batch": "batched generate, left padding: all tokens / wall time (prefill included)",
    "ttft": "wall time of apply_chat_template + tokenize + generate(max_new_tokens=1)",
    "load": "AutoTokenizer + AutoModelForCausalLM.from_pretrained(gguf_file=..., dtype=float32)",
}


def measure(spec: WorkerSpec) -> dict:
    result = {"figures": {}, "info": {}, "notes": [], "methods": dict(METHODS)}
    import torch
    import transformers
    from transformers import AutoModelForCausalLM  # noqa: F401  (its import cost is not load time)

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(spec.threads)
    result["figures"]["rss_imports_mib"] = [memory_mib()["rss"]]
    result["info"]["resident_after_drop"] = drop_from_page_cache(spec.gguf_path)
    started = now()
    model, tokenizer = _load(spec)
    result["figures"]["load_cold_ms"] = [(now() - started) * 1000]
    if spec.cold_only:
        return result
    result["info"]["weight_bytes"] = _parameter_bytes(model)
    with torch.inference_mode():
        _measure_single(model, tokenizer, spec, result, torch)
        result["figures"]["rss_peak_b1_mib"] = [memory_mib()["peak"]]
        _measure_batches(model, tokenizer, spec, result)
    result["figures"]["rss_peak_mib"] = [memory_mib()["peak"]]
    del model
    result["figures"]["load_warm_ms"] = _warm_loads(spec)
    return result


def _load(spec: WorkerSpec):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(Path(spec.gguf_path).parent), Path(spec.gguf_path).name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def _measure_single(model, tokenizer, spec: WorkerSpec, result: dict, torch) -> None:
    settings, figures, info = spec.settings, result["figures"], result["info"]

    def first_token(text: str) -> None:
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
        model.generate(**ids, max_new_tokens=1, do_sample=False)

    info["pp_tokens"] = len(tokenizer(spec.pp_text, add_special_tokens=False).input_ids)
    figures["pp_tps"] = repeat(settings.runs, lambda: info["pp_tokens"] / wall(lambda: first_token(spec.pp_text)))
    log("transformers", f"prompt processing {info['pp_tokens']} tokens: {figures['pp_tps']}")

    def decode_once() -> float:
        ids = tokenizer(DECODE_PROMPTS[0], add_special_tokens=False, return_tensors="pt")
        stamps = _TokenStamps()
        model.generate(**ids, max_new_tokens=settings.decode_tokens, min_new_tokens=settings.decode_tokens,
                       do_sample=False, streamer=stamps)
        return (len(stamps.times) - 1) / (stamps.times[-1] - stamps.times[0])

    figures["decode1_tps"] = repeat(settings.runs, decode_once)
    log("transformers", f"decode batch 1: {figures['decode1_tps']}")

    def chat_first_token() -> None:
        first_token(tokenizer.apply_chat_template(list(CHAT_MESSAGES), tokenize=False, add_generation_prompt=True))

    chat_text = tokenizer.apply_chat_template(list(CHAT_MESSAGES), tokenize=False, add_generation_prompt=True)
    info["chat_tokens"] = len(tokenizer(chat_text, add_special_tokens=False).input_ids)
    figures["ttft_ms"] = repeat(settings.runs, lambda: 1000 * wall(chat_first_token))
    log("transformers", f"TTFT {info['chat_tokens']} tokens: {figures['ttft_ms']}")


class _TokenStamps:
    """A generate() streamer that records when each new token arrives (the first put is the prompt)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._prompt_seen = False

    def put(self, value) -> None:
        if self._prompt_seen:
            self.times.append(now())
        self._prompt_seen = True

    def end(self) -> None:
        pass


def _measure_batches(model, tokenizer, spec: WorkerSpec, result: dict) -> None:
    settings = spec.settings
    tokenizer.padding_side = "left"
    for size in settings.batch_sizes:
        prompts = list(DECODE_PROMPTS[:size])
        samples = repeat(settings.runs, lambda prompts=prompts: _batch_once(model, tokenizer, prompts, settings.batch_tokens))
        result["figures"][f"decode_b{size}_tps"] = samples
        log("transformers", f"aggregate decode batch {size}: {samples}")


def _batch_once(model, tokenizer, prompts: list[str], num_tokens: int) -> float:
    started = now()
    ids = tokenizer(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=num_tokens, min_new_tokens=num_tokens, do_sample=False)
    return (out.shape[1] - ids.input_ids.shape[1]) * len(prompts) / (now() - started)


def _warm_loads(spec: WorkerSpec) -> list[float]:
    times = []
    for _ in range(spec.settings.runs):
        gc.collect()
        started = now()
        model, tokenizer = _load(spec)
        times.append((now() - started) * 1000)
        del model, tokenizer
    return times


def _parameter_bytes(model) -> int:
    """fp32 weights, the tied output head counted once."""
    storages = {p.untyped_storage().data_ptr(): p.untyped_storage().nbytes() for p in model.parameters()}
    return sum(storages.values())
