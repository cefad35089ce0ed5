"""Our engine, measured through the SDK: ``Session`` -> ``load_model`` -> ``infer``/``chat``."""

from __future__ import annotations

import gc
import json
import struct
from concurrent.futures import ThreadPoolExecutor

from enginebench.measure import drop_from_page_cache, log, memory_mib, now, repeat, wall
from enginebench.spec import CHAT_MESSAGES, DECODE_PROMPTS, WorkerSpec

METHODS = {
    "pp": "wall time of infer(raw=True, max_tokens=1): tokenize + prefill + first token (prefix cache off)",
    "decode": "InferResult.timings: (tokens - 1) / (total_s - ttft_s), greedy, ignore_eos",
    "batch": "infer_batch: all tokens / wall time (the short prompts' prefill included)",
    "ttft": "wall time of chat(messages, max_tokens=1): template + tokenize + prefill + first token",
    "load": "Session.load_model(.mcp)",
}
GREEDY = {"temperature": 0.0, "ignore_eos": True}


def measure(spec: WorkerSpec) -> dict:
    result = {"figures": {}, "info": {}, "notes": [], "methods": dict(METHODS)}
    import torch

    from mcp.engine.loop_config import LoopConfig
    from mcp.runtime import RuntimeConfig, Session

    torch.set_num_threads(spec.threads)
    # The prefix cache off: every run of the same prompt prefills it again, as in the other engines.
    loop = LoopConfig(enable_prefix_caching=False)
    session = Session(RuntimeConfig(device="cpu", num_threads=spec.threads, scheduler=loop,
                                    decode_dots=spec.options.get("decode_dots", "auto")))
    result["figures"]["rss_imports_mib"] = [memory_mib()["rss"]]
    result["info"]["resident_after_drop"] = drop_from_page_cache(spec.mcp_path)
    started = now()
    model = session.load_model(spec.mcp_path, name="cold")
    result["figures"]["load_cold_ms"] = [(now() - started) * 1000]
    if spec.cold_only:
        return result
    result["info"].update(precision=model.precision, weight_bytes=loaded_weight_bytes(model),
                          mcp_tensor_bytes=tensor_data_bytes(spec.mcp_path))
    _measure_single(model, spec, result)
    result["figures"]["rss_peak_b1_mib"] = [memory_mib()["peak"]]
    _measure_batches(model, spec, result)
    result["figures"]["rss_peak_mib"] = [memory_mib()["peak"]]
    result["figures"]["load_warm_ms"] = _warm_loads(session, model, spec)
    return result


def _measure_single(model, spec: WorkerSpec, result: dict) -> None:
    settings, figures, info = spec.settings, result["figures"], result["info"]
    info["pp_tokens"] = model.infer(spec.pp_text, raw=True, max_tokens=1, **GREEDY).usage.prompt_tokens
    figures["pp_tps"] = repeat(settings.runs, lambda: info["pp_tokens"] / wall(
        lambda: model.infer(spec.pp_text, raw=True, max_tokens=1, **GREEDY)))
    log("ours", f"prompt processing {info['pp_tokens']} tokens: {figures['pp_tps']}")

    figures["decode1_tps"] = repeat(settings.runs, lambda: decode_tps(model, DECODE_PROMPTS[0], settings.decode_tokens))
    log("ours", f"decode batch 1: {figures['decode1_tps']}")
    info["chat_tokens"] = model.chat(list(CHAT_MESSAGES), max_tokens=1, **GREEDY).usage.prompt_tokens
    figures["ttft_ms"] = repeat(settings.runs, lambda: 1000 * wall(
        lambda: model.chat(list(CHAT_MESSAGES), max_tokens=1, **GREEDY)))
    log("ours", f"TTFT {info['chat_tokens']} tokens: {figures['ttft_ms']}")


def decode_tps(model, prompt: str, tokens: int) -> float:
    """One greedy decode of ``tokens`` tokens after ``prompt``: tok/s from the first token to the last."""
    out = model.infer(prompt, raw=True, max_tokens=tokens, **GREEDY)
    timings = out.timings
    return (out.usage.completion_tokens - 1) / (timings.total_s - timings.ttft_s)


def _measure_batches(model, spec: WorkerSpec, result: dict) -> None:
    settings = spec.settings
    if not hasattr(model, "infer_batch"):
        result["notes"].append("* Model.infer_batch does not exist yet: the aggregate decode figures marked * are "
                               "threads calling infer concurrently, one sequence each")
        result["methods"]["batch"] = "threads calling infer concurrently: all tokens / wall time"
        result["marks"] = {f"decode_b{size}_tps": "*" for size in settings.batch_sizes}
    for size in settings.batch_sizes:
        prompts = list(DECODE_PROMPTS[:size])

        def batch_once(prompts=prompts) -> float:
            started = now()
            outputs = _infer_batch(model, prompts, settings.batch_tokens)
            return sum(out.usage.completion_tokens for out in outputs) / (now() - started)

        result["figures"][f"decode_b{size}_tps"] = repeat(settings.runs, batch_once)
        log("ours", f"aggregate decode batch {size}: {result['figures'][f'decode_b{size}_tps']}")


def _infer_batch(model, prompts: list[str], max_tokens: int) -> list:
    if hasattr(model, "infer_batch"):
        return model.infer_batch(prompts, raw=True, max_tokens=max_tokens, **GREEDY)
    with ThreadPoolExecutor(len(prompts)) as pool:
        return list(pool.map(lambda p: model.infer(p, raw=True, max_tokens=max_tokens, **GREEDY), prompts))


def _warm_loads(session, model, spec: WorkerSpec) -> list[float]:
    times = []
    for index in range(spec.settings.runs):
        session.unload_model(model)
        del model
        gc.collect()
        started = now()
        model = session.load_model(spec.mcp_path, name=f"warm{index}")
        times.append((now() - started) * 1000)
    session.unload_model(model)
    return times


def loaded_weight_bytes(model) -> int:
    """Bytes of the loaded module's weight tensors, each view counted once (rotary tables left out).

    Per tensor, not per storage: the weights are views into one memory map of the whole file,
    so counting storages gave the file's size, tensors that decode never reads included."""
    module = model.engine.model
    seen, total = set(), 0
    tensors = [*module.named_parameters(), *module.named_buffers()]
    for name, tensor in tensors:
        if "rotary" in name:
            continue
        view = (tensor.data_ptr(), tensor.nbytes)
        if view not in seen:
            seen.add(view)
            total += tensor.nbytes
    return total


def tensor_data_bytes(path: str) -> int:
    """Bytes of tensor data in a safetensors-based file (the ``.mcp``), from its header."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    return sum(end - begin for key, entry in header.items() if key != "__metadata__"
               for begin, end in [entry["data_offsets"]])
