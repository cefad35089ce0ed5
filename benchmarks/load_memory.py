"""Peak and current resident memory (VmHWM, VmRSS from /proc/self/status) at each stage of
``Session.load_model`` and of one greedy generate, for one model: where a load's memory goes.

CPU load does not change these figures (unlike timings). Linux only.

    .venv/bin/python benchmarks/load_memory.py [--model PATH_OR_CATALOG_NAME] [--tokens N] [--threads N]
"""

from __future__ import annotations

import argparse
import functools


def memory_mib() -> dict[str, float]:
    with open("/proc/self/status", encoding="ascii") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmHWM", "VmRSS", "RssAnon", "RssFile")}


def show(stage: str) -> None:
    print(f"{stage:36s} " + "  ".join(f"{key} {value:6.1f}" for key, value in memory_mib().items()), flush=True)


def _staged(owner, name: str, label: str) -> None:
    """Print the memory before and after each call of ``owner.name``."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def staged(*args, **kwargs):
        show(f"  before {label}")
        result = function(*args, **kwargs)
        show(f"  after {label}")
        return result

    setattr(owner, name, staged)


def _built(cls):
    """The model class, its construction staged."""
    def build(*args, **kwargs):
        show("  before model construction")
        model = cls(*args, **kwargs)
        show("  after model construction")
        return model

    return build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    show("start (MiB)")
    import torch

    import mcp.engine.engine as engine
    import mcp.runtime.session as session_module
    from mcp.engine.loop_config import LoopConfig
    from mcp.runtime import RuntimeConfig, Session

    show("imports")
    _staged(session_module, "open_model", "open_model (header)")
    _staged(engine.Tokenizer, "from_spec", "tokenizer")
    model_class = engine.model_class
    engine.model_class = lambda name: _built(model_class(name))
    _staged(engine, "interleave_for_integer_dots", "interleave for integer dots")
    _staged(session_module, "Model", "runtime Model (loop, KV, step)")
    torch.set_num_threads(args.threads)
    session = Session(RuntimeConfig(device="cpu", num_threads=args.threads,
                                    scheduler=LoopConfig(enable_prefix_caching=False)))
    model = session.load_model(args.model, name="measured")
    show("after load_model")
    out = model.infer("The quick brown fox", raw=True, max_tokens=args.tokens, temperature=0.0, ignore_eos=True)
    show(f"after a {out.usage.completion_tokens}-token generate")


if __name__ == "__main__":
    main()
