"""Soak: 5,000 requests through the engine loop with random cancellations. Every KV block must
come back to the pool, the accounting must hold, every request must end exactly once, and the
process's resident memory must stay flat once warmed up. The soak runs in a process of its own
(soak_run.py), so that the memory measured is the engine loop's alone."""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from soak_run import NUM_REQUESTS

SOAK = Path(__file__).with_name("soak_run.py")
# Anonymous resident memory is read after every window of 128 requests from the end of warm-up
# on, after malloc_trim (so free memory glibc keeps for reuse is not counted: read without it,
# one run moved by +-8 MiB from one window to the next), and only its anonymous part (so code
# pages first run late are not either). Warm-up touches every KV block (64 sequences of up to
# 2 blocks contend for 64, so all are used and preemptions happen: with 96 blocks and at most 3
# new tokens a request, a fast CPU finished requests before the blocks ran out and never
# preempted) and the largest gather buffers.
#
# A leak grows memory window after window, where the heap's own moves come and go (one run here:
# 712.6 to 714.1 MiB and back to 712.7 within three windows). So the check is the median growth
# from one window to the next: what one request holds (its Request, a
# SequenceState with its torch.Generator's ~5 KiB of state, its handle and outputs) left behind
# by each is 0.6 MiB a window or more, where a run of its own measured a median of 0 KiB (+0.5
# MiB in all, AMD EPYC) and the planted 5 KiB a request 706 KiB (20 KiB: 2,656 KiB). The total
# is bounded too, loosely: runs of their own moved by +0.1 to +0.7 MiB in all, but one CI run
# ended +12.2 MiB up, which the old bound of 12 MiB on the total failed (the result now keeps
# every window's figure, so a rise like that shows how it happened).
MEDIAN_STEP_TOLERANCE_KIB = 256
RSS_TOLERANCE_MIB = 48
# Live objects of one type may not grow by this many after warm-up: one left behind by each
# request, or by each of a fifth of them, is well past it (two runs: no type grew by more than 77).
OBJECT_TOLERANCE = 500


def soak(model: Path, requests: int = NUM_REQUESTS, leak: str = "") -> dict:
    done = subprocess.run([sys.executable, str(SOAK), str(model), str(requests), *([leak] if leak else [])],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def leaks(result: dict) -> list[str]:
    """What the soak's memory says was left behind, in words; empty when nothing was."""
    found = [f"{name}: +{count} objects" for name, count in result["objects_grown"].items() if count >= OBJECT_TOLERANCE]
    anon = result["rss_anon_mib"]
    step_kib = statistics.median(later - earlier for earlier, later in itertools.pairwise(anon)) * 1024
    if step_kib >= MEDIAN_STEP_TOLERANCE_KIB:
        found.append(f"anonymous RSS grew a median {step_kib:.0f} KiB a window of requests after warm-up")
    if anon[-1] - anon[0] >= RSS_TOLERANCE_MIB:
        found.append(f"anonymous RSS grew {anon[-1] - anon[0]:.1f} MiB after warm-up")
    return found


@pytest.mark.slow
def test_soak_with_random_cancellations_returns_every_block(smollm2_mcp: Path) -> None:
    result = soak(smollm2_mcp)
    assert result["finished"] == NUM_REQUESTS == sum(result["endings"].values())
    assert result["running"] == result["waiting"] == 0
    assert result["free_blocks"] == result["blocks"] == 64
    endings = result["endings"]
    assert endings["cancelled"] > 500 and endings["length"] > 2000 and result["preemptions"] > 0
    assert leaks(result) == [], result
    print(f"\nsoak: {NUM_REQUESTS} requests in {result['seconds']:.0f} s, {endings}, {result['steps']} steps, "
          f"{result['preemptions']} preemptions, anonymous RSS after warm-up {result['rss_anon_mib'][0]:.1f} -> "
          f"{result['rss_anon_mib'][-1]:.1f} MiB")


@pytest.mark.slow
@pytest.mark.parametrize("leak, seen", [("events", "mcp.engine.hooks"), ("buffers", "anonymous RSS grew a median")])
def test_the_soak_sees_a_planted_leak(smollm2_mcp: Path, leak: str, seen: str) -> None:
    """Each kind of leak fails the check: objects kept by a hook, 5 KiB buffers kept per request
    (about what a Request with its SequenceState holds), over 1,000 requests after warm-up."""
    found = leaks(soak(smollm2_mcp, 1500, leak))
    assert any(seen in line for line in found), found
