"""Our lean decoder (``mcp.engine.lean.LeanModel``): the same .mcp and native step, no torch in
the process. One sequence at a time, so it has no aggregate decode figures."""

from __future__ import annotations

import gc

from enginebench import ours  # the same SDK calls, timed the same way (it imports torch only when run)
from enginebench.measure import drop_from_page_cache, log, memory_mib, now, repeat, wall
from enginebench.ours import GREEDY, decode_tps
from enginebench.spec import CHAT_MESSAGES, DECODE_PROMPTS, WorkerSpec

METHODS = {
    **{key: ours.METHODS[key] for key in ("pp", "decode", "ttft")},
    "load": "LeanModel(.mcp): map the file, build the tokenizer and the step's tables",
}


def measure(spec: WorkerSpec) -> dict:
    result = {"figures": {}, "info": {}, "notes": [], "methods": dict(METHODS)}
    from mcp.engine.lean import LeanModel

    result["figures"]["rss_imports_mib"] = [memory_mib()["rss"]]
    result["info"]["resident_after_drop"] = drop_from_page_cache(spec.mcp_path)
    options = {"num_threads": spec.threads, "prefix_caching": False}
    started = now()
    model = LeanModel(spec.mcp_path, name="cold", **options)
    result["figures"]["load_cold_ms"] = [(now() - started) * 1000]
    if spec.cold_only:
        return result
    result["info"].update(precision=model.precision, weight_bytes=model.weight_bytes)
    figures, info, settings = result["figures"], result["info"], spec.settings
    info["pp_tokens"] = model.infer(spec.pp_text, raw=True, max_tokens=1, **GREEDY).usage.prompt_tokens
    figures["pp_tps"] = repeat(settings.runs, lambda: info["pp_tokens"] / wall(
        lambda: model.infer(spec.pp_text, raw=True, max_tokens=1, **GREEDY)))
    log("lean", f"prompt processing {info['pp_tokens']} tokens: {figures['pp_tps']}")
    figures["decode1_tps"] = repeat(settings.runs, lambda: decode_tps(model, DECODE_PROMPTS[0],
                                                                       settings.decode_tokens))
    log("lean", f"decode batch 1: {figures['decode1_tps']}")
    info["chat_tokens"] = model.chat(list(CHAT_MESSAGES), max_tokens=1, **GREEDY).usage.prompt_tokens
    figures["ttft_ms"] = repeat(settings.runs, lambda: 1000 * wall(
        lambda: model.chat(list(CHAT_MESSAGES), max_tokens=1, **GREEDY)))
    log("lean", f"TTFT {info['chat_tokens']} tokens: {figures['ttft_ms']}")
    figures["rss_peak_b1_mib"] = [memory_mib()["peak"]]
    for size in settings.batch_sizes:
        figures[f"decode_b{size}_tps"] = "n/a"
    result["notes"].append("no aggregate decode: it runs one sequence at a time")
    figures["rss_peak_mib"] = [memory_mib()["peak"]]
    figures["load_warm_ms"] = _warm_loads(spec, options)
    return result


def _warm_loads(spec: WorkerSpec, options: dict) -> list[float]:
    """Loads of the file the page cache holds; each model is dropped as soon as it is built."""
    from mcp.engine.lean import LeanModel

    times = []
    for index in range(spec.settings.runs):
        gc.collect()
        started = now()
        LeanModel(spec.mcp_path, name=f"warm{index}", **options)
        times.append((now() - started) * 1000)
    return times
