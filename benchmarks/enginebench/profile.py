"""``synthetic.py --profile``'s worker: where one batch-1 decode token's time goes.

Ours: ``decode_profile.profile_decode`` (timers around the runner's parts: the native step's
C++ call, the output head, the embedding, the whole step; the loop is the rest of a token).
With ``options["peer"] == "llamacpp"``: llama.cpp's whole token on the same GGUF, for scale.
"""

from __future__ import annotations

from enginebench.measure import log
from enginebench.spec import DECODE_PROMPTS, WorkerSpec

METHODS = {"profile": "greedy decode after a 16-token warm-up; mean ms a token, parts timed in the runner"}


def measure(spec: WorkerSpec) -> dict:
    result = {"figures": {}, "info": {}, "notes": [], "methods": dict(METHODS)}
    tokens = spec.settings.decode_tokens
    if spec.options.get("peer") == "llamacpp":
        import numpy

        from enginebench.llamacpp import decode_tps, load

        llm = load(spec.gguf_path, tokens + 64, spec.threads, spec.options.get("use_extra_bufts", True))
        decode_tps(llm, DECODE_PROMPTS[0], 16, numpy)  # warm up
        result["figures"]["token_ms"] = 1000 / decode_tps(llm, DECODE_PROMPTS[0], tokens, numpy)
        log("profile", f"llama.cpp: {result['figures']['token_ms']:.2f} ms a token")
        return result
    import torch

    from decode_profile import profile_decode
    from mcp.runtime import RuntimeConfig, Session

    torch.set_num_threads(spec.threads)
    dots = spec.options.get("decode_dots", "auto")
    with Session(RuntimeConfig(device="cpu", num_threads=spec.threads, decode_dots=dots)) as session:
        model = session.load_model(spec.mcp_path, name="profiled")
        per_token, parts, decode_tokens = profile_decode(model, DECODE_PROMPTS[0], tokens)
        result["info"]["precision"] = model.precision
    parts["loop (the rest)"] = per_token * 1e3 - parts.get("execute", 0.0)
    result["figures"].update(token_ms=per_token * 1e3, parts_ms=parts, decode_tokens=decode_tokens)
    log("profile", f"ours: {per_token * 1e3:.2f} ms a token: {parts}")
    return result
