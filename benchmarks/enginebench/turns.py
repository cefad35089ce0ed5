"""Engines taking turns: each engine's worker (a fresh process) once a round, the order
shuffled every round, so that all of them see the same drifts of a shared host's speed;
each figure's samples are gathered over the rounds (the median and the range are then the
rounds'). Used by ``synthetic.py``."""

from __future__ import annotations

import random
import sys

from enginebench.measure import OtherLoad
from enginebench.spec import WorkerSpec
from enginebench.worker import run_measured


def measure_in_turns(specs: dict[str, WorkerSpec], rounds: int, timeout_s: float,
                     seed: int = 0) -> tuple[dict[str, dict], dict[str, float | None]]:
    """(each engine's merged result, the mean share of the cores others used while it ran).

    An engine whose worker fails is not run again; its result is the error, with the round.
    """
    specs = dict(specs)
    merged: dict[str, dict] = {}
    shares: dict[str, list[float]] = {engine: [] for engine in specs}
    order = random.Random(seed)
    for number in range(1, rounds + 1):
        for engine in order.sample(list(specs), len(specs)):
            if "error" in merged.get(engine, {}):
                continue
            print(f"[turns] round {number}/{rounds}: {engine}", file=sys.stderr, flush=True)
            watch = OtherLoad()
            result, specs[engine] = run_measured(specs[engine], timeout_s)
            share = watch.share()
            if share is not None:
                shares[engine].append(share)
            if "error" in result:
                merged[engine] = {"error": f"round {number}: {result['error']}"}
            else:
                merged[engine] = merge(merged.get(engine), result)
    return merged, {e: (sum(s) / len(s) if s else None) for e, s in shares.items()}


def merge(total: dict | None, result: dict) -> dict:
    """``result`` added to ``total``: samples appended, notes once each, the first round's info
    (the page-cache residency before each cold load kept as a list)."""
    resident = result["info"].get("resident_after_drop")
    if total is None:
        result["info"]["resident_after_drop"] = [resident]
        return result
    for key, values in result["figures"].items():
        if isinstance(values, list) and isinstance(total["figures"].get(key), list):
            total["figures"][key] += values
    total["notes"] += [note for note in result["notes"] if note not in total["notes"]]
    total["info"]["resident_after_drop"].append(resident)
    return total
