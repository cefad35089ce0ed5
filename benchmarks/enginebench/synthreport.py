"""``synthetic.py``'s report: one table per model file (ours beside llama.cpp on that file,
medians [min-max] over the rounds, ratios) with issue 30's targets judged under it, a summary
line per file, and the profile mode's breakdown."""

from __future__ import annotations

import dataclasses

from enginebench import report
from enginebench.report import Row, Target

ENGINE_ORDER = ("ours", "lean", "llamacpp")


# engine.py's rows where the meaning differs here: the bound is the GGUF's (the same for both
# engines), the weights each engine's own, and the RSS target the lean decoder's of issue 30.
RELABELLED = {
    "rss_peak_b1_mib": "peak RSS, batch-1 runs (MiB)",
    "rss_target_mib": "  lean target: 1.1 x (.mcp + KV) (MiB)",
    "weight_mb": "weights held for decode (MB)",
    "bound_tps": "bandwidth bound, batch 1 (tok/s)",
}


def rows(settings, pp_tokens, chat_tokens, with_lean: bool) -> list[Row]:
    """engine.py's rows (``report.figure_rows``), in the order of issue 30's targets."""
    size = max(settings.batch_sizes)
    known = {row.key: row for row in report.figure_rows(settings.batch_sizes, pp_tokens, settings.decode_tokens,
                                                         chat_tokens)}
    keys = ["decode1_tps", "pp_tps", "ttft_ms", f"decode_b{size}_tps", "load_warm_ms", "load_cold_ms",
            "rss_peak_b1_mib", *(["rss_target_mib"] if with_lean else []), "rss_peak_mib", "weight_mb", "bound_tps",
            "bound_pct"]
    return [dataclasses.replace(known[key], label=RELABELLED.get(key, known[key].label)) for key in keys]


def target_set(name: str, batch_size: int, with_lean: bool) -> list[Target]:
    """Issue 30's targets for a file of this shape (``1b``, ``3b``) or the default model."""
    if name == "default":
        return [Target("batch-1 decode >= 1.3x llama.cpp", "decode1_tps", "higher", 1.3, ratio_to="decode1_tps"),
                Target("prompt processing >= 2.5x llama.cpp", "pp_tps", "higher", 2.5, ratio_to="pp_tps")]
    decode = Target("batch-1 decode >= 1.1x llama.cpp", "decode1_tps", "higher", 1.1, ratio_to="decode1_tps")
    rss = Target("peak RSS (batch 1) <= llama.cpp's", "rss_peak_b1_mib", "lower", 1.0, ratio_to="rss_peak_b1_mib")
    if name == "3b":
        return [decode, rss]
    lean = [Target("lean: peak RSS <= 1.1 x (.mcp + KV)", "rss_peak_b1_mib", "lower",
                   bound_figure="rss_target_mib")] if with_lean else []
    return [
        decode,
        Target("batch-1 decode >= 75% of the bound", "bound_pct", "higher", 75.0),
        Target("prompt processing >= 1.5x llama.cpp", "pp_tps", "higher", 1.5, ratio_to="pp_tps"),
        Target("TTFT <= 0.7x llama.cpp's", "ttft_ms", "lower", 0.7, ratio_to="ttft_ms"),
        Target(f"{batch_size} seqs aggregate >= 3x llama.cpp batch 1", f"decode_b{batch_size}_tps", "higher", 3.0,
               ratio_to="decode1_tps"),
        rss,
        *lean,
    ]


def add_derived(figures: dict, info: dict, gbps: float | None, file_bytes: int) -> None:
    """The bound is the same for every engine: the bandwidth over the GGUF's tensor bytes (what
    a batch-1 step must read); "weights held" is each engine's own (ours: the loaded module's
    tensors; llama.cpp: llama_model_size())."""
    report.add_derived(figures, {"weight_bytes": file_bytes}, gbps)
    if info.get("weight_bytes"):
        figures["weight_mb"] = [info["weight_bytes"] / 1e6]


def file_block(title: str, lines_above: list[str], settings, results: dict, gbps: float | None,
               file_bytes: int, targets: str, rss_target_mib: float | None) -> list[str]:
    """One file's table and its targets."""
    figures, marks = {}, {}
    for engine, result in results.items():
        if "figures" in result:
            figures[engine] = dict(result["figures"])
            add_derived(figures[engine], result["info"], gbps, file_bytes)
            marks[engine] = result.get("marks", {})
    if "lean" in figures and rss_target_mib is not None:
        figures["lean"]["rss_target_mib"] = [rss_target_mib]
    info = next((r["info"] for r in results.values() if "info" in r), {})
    engines = tuple(e for e in ENGINE_ORDER if e in results)
    table_rows = rows(settings, info.get("pp_tokens", settings.prompt_tokens), info.get("chat_tokens", "?"),
                      "lean" in engines)
    lines = [f"== {title}", *lines_above, *report.table(table_rows, figures, marks, engines)]
    for engine, result in results.items():
        if "error" in result:
            lines.append(f"  {report.TITLES[engine]}: not measured: {result['error']}")
    size = max(settings.batch_sizes)
    lines += report.target_lines(target_set(targets, size, "lean" in engines), figures,
                                 title="issue 30's targets, this file (medians):")
    return lines


def summary_line(label: str, results: dict, settings) -> str:
    """One line: ours / llama.cpp on the headline figures (> 1 = ours better)."""
    ours, llama = (results.get(e, {}).get("figures") for e in ("ours", "llamacpp"))
    size = max(settings.batch_sizes)
    parts = []
    for key, name, better in (("decode1_tps", "decode", "higher"), ("pp_tps", "pp", "higher"),
                              ("ttft_ms", "TTFT", "lower"), (f"decode_b{size}_tps", f"{size} seqs", "higher"),
                              ("rss_peak_b1_mib", "RSS", "lower")):
        mine, theirs = report.median_figure(ours, key), report.median_figure(llama, key)
        if mine and theirs:
            parts.append(f"{name} {(mine / theirs if better == 'higher' else theirs / mine):.2f}x")
    return f"  {label:<34} " + (", ".join(parts) if parts else "no ratios (an engine has no figures)")


def profile_lines(title: str, ours: dict, llama: dict | None) -> list[str]:
    """Where one token goes (the profile mode), llama.cpp's whole token beside it."""
    if "error" in ours:
        return [f"== {title}: not profiled: {ours['error']}"]
    figures = ours["figures"]
    lines = [f"== {title}: {figures['token_ms']:.2f} ms a token ({1000 / figures['token_ms']:.1f} tok/s) over "
             f"{figures['decode_tokens']} tokens, {ours['info'].get('precision')}"]
    for name, ms in figures["parts_ms"].items():
        label = "  whole step (execute)" if name == "execute" else f"    {name}"
        lines.append(f"{label:<28} {ms:8.2f} ms")
    if llama and "figures" in llama:
        theirs = llama["figures"]["token_ms"]
        lines.append(f"  llama.cpp, whole token     {theirs:8.2f} ms ({1000 / theirs:.1f} tok/s): "
                     f"ours / llama.cpp time {figures['token_ms'] / theirs:.2f}x")
    elif llama:
        lines.append(f"  llama.cpp: not measured: {llama.get('error')}")
    return lines

