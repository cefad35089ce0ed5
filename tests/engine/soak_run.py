"""The soak of test_loop_soak.py, run in a process of its own:
``python soak_run.py MODEL.mcp [REQUESTS [LEAK]]`` prints one JSON object with what the test checks,
the anonymous resident memory after every window from the end of warm-up on among it.

Its own process, so that the resident memory it reads is the engine loop's alone: inside the
test runner it grew by +25 and +12 MiB in two CI runs, where a process of its own mostly stays
within 1 MiB; what the other ~2,000 tests leave in the runner's process is not the loop's to
answer for."""

from __future__ import annotations

import ctypes
import gc
import json
import random
import sys
import time
from collections import Counter

from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.handle import RequestOptions
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.modelfile.reader import open_model

NUM_REQUESTS = 5000
WARM_UP = 500
WINDOW = 128  # requests in flight at once
WORDS = ["cat", " dog", " sky", " red", " one", " two", " sun", " sea", " tree", " blue"]


def resident_mib() -> dict[str, float]:
    """VmRSS and its anonymous part, once glibc has handed back what it holds free."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    with open("/proc/self/status", encoding="ascii") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "RssAnon")}


def live_objects() -> Counter[str]:
    """Live objects the garbage collector tracks, by type."""
    gc.collect()
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


def run_window(loop: EngineLoop, engine: NativeEngine, rng: random.Random, size: int) -> None:
    """Submit ``size`` short requests; cancel some at once, some after their first token."""
    plans, handles = [], []
    for _ in range(size):
        prompt = engine.tokenizer.encode("".join(rng.choices(WORDS, k=rng.randint(1, 3))))
        params = SamplingParams(max_tokens=rng.randint(1, 5), temperature=rng.choice([0.0, 0.8]), seed=rng.randint(0, 9),
                                ignore_eos=True)
        options = RequestOptions(slo_class=rng.choice(["critical", "high", "medium", "low"]),
                                 tenant=rng.choice(["a", "b", "c"]))
        handles.append(loop.submit(prompt, params, options))
        plans.append(rng.random())
    for plan, handle in zip(plans, handles):
        if plan < 0.15:
            handle.cancel()  # most likely still waiting
    for plan, handle in zip(plans, handles):
        if 0.15 <= plan < 0.3:
            next(handle, None)
            handle.cancel()  # mid-generation, or already ended (then it does nothing)
        handle.wait()


def soak(model_path: str, num_requests: int = NUM_REQUESTS, leak: str = "") -> dict:
    """``leak`` plants one, to show that the checks see it: "events" keeps every completion
    event, "buffers" 5 KiB a request."""
    with open_model(model_path) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))
    config = LoopConfig(scheduler=SchedulerConfig(max_num_seqs=64, max_num_batched_tokens=256, max_waiting=256),
                        block_size=4, kv_cache_bytes=64 * 4 * 46080,  # 64 blocks of 4 tokens: they run out
                        pacing=False)  # full steps, so the blocks do run out and preemptions are soaked too
    loop = EngineLoop(engine, config)
    endings: Counter[str] = Counter()
    loop.hooks.add("on_generation_complete", lambda e: endings.update([e.finish_reason]))
    kept: list = []
    if leak == "events":
        loop.hooks.add("on_generation_complete", kept.append)
    elif leak == "buffers":
        loop.hooks.add("on_generation_complete", lambda e: kept.append(bytearray(5120)))
    rng = random.Random(0)
    objects_before = None
    anonymous: list[float] = []  # RssAnon after each window from the end of warm-up on
    started = time.monotonic()
    try:
        for first in range(0, num_requests, WINDOW):
            run_window(loop, engine, rng, min(WINDOW, num_requests - first))
            if first + WINDOW >= WARM_UP:
                if objects_before is None:
                    objects_before = live_objects()
                anonymous.append(resident_mib()["RssAnon"])
        stats = loop.stats()
        loop.kv.check_invariants()
        objects = live_objects()
    finally:
        loop.close()
    return {
        "seconds": time.monotonic() - started,
        "finished": stats.num_finished, "running": stats.num_running, "waiting": stats.num_waiting,
        "free_blocks": stats.num_free_blocks, "blocks": stats.num_blocks,
        "steps": stats.num_steps, "preemptions": stats.num_preemptions,
        "endings": dict(endings),
        "objects_grown": {name: objects[name] - objects_before[name] for name in objects
                          if objects[name] > objects_before[name]},
        "rss_anon_mib": anonymous,
    }


if __name__ == "__main__":
    model, *rest = sys.argv[1:]
    requests = int(rest[0]) if rest else NUM_REQUESTS
    leak = rest[1] if len(rest) > 1 else ""
    print(json.dumps(soak(model, requests, leak)))
