"""Running one engine's measurements in a fresh subprocess, and the subprocess side of it.

The parent writes a ``WorkerSpec`` as JSON and starts ``python benchmarks/engine.py --worker
SPEC OUT``; the worker imports only its engine's module (the llama.cpp worker never loads
torch), measures, and writes its result as JSON to OUT.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from importlib import util
from pathlib import Path

from enginebench.spec import WorkerSpec

MODULES = {"ours": "enginebench.ours", "lean": "enginebench.lean", "llamacpp": "enginebench.llamacpp",
           "transformers": "enginebench.hf", "bandwidth": "enginebench.bandwidth", "profile": "enginebench.profile"}
LLAMACPP_MISSING = ("llama-cpp-python is not installed: .venv/bin/pip install -c constraints/cpu.txt -e '.[llamacpp]' "
                    "(compiles llama.cpp once, about 8 minutes on 2 cores)")
ENTRY = Path(__file__).resolve().parent.parent / "engine.py"


@dataclass(frozen=True)
class WorkerOutcome:
    result: dict | None  # None when the worker failed
    returncode: int
    error: str  # why it failed: its last stderr line, the signal that killed it, or the timeout


def run_worker(spec: WorkerSpec, timeout_s: float) -> WorkerOutcome:
    """Run ``spec`` in a subprocess (killed after ``timeout_s``); its stderr passes through."""
    with tempfile.TemporaryDirectory(prefix="enginebench-") as folder:
        spec_path, out_path = Path(folder) / "spec.json", Path(folder) / "result.json"
        spec_path.write_text(spec.to_json())
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(spec.threads),
               "TOKENIZERS_PARALLELISM": "false"}
        # faulthandler: a worker that dies of a signal still says where.
        command = [sys.executable, "-X", "faulthandler", str(ENTRY), "--worker", str(spec_path), str(out_path)]
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        timer = threading.Timer(timeout_s, process.kill)
        timer.start()
        last_lines: collections.deque[str] = collections.deque(maxlen=20)
        for line in process.stderr:  # progress, passed through as it comes
            sys.stderr.write(line)
            last_lines.append(line.rstrip())
        returncode = process.wait()
        timed_out = timer.finished.is_set()  # set before cancel() only if the timer fired
        timer.cancel()
        if timed_out:
            return WorkerOutcome(None, returncode, f"timed out after {timeout_s:.0f} s")
        if returncode != 0 or not out_path.exists():
            return WorkerOutcome(None, returncode, _tail(list(last_lines), returncode))
        return WorkerOutcome(json.loads(out_path.read_text()), 0, "")


def run_measured(spec: WorkerSpec, timeout_s: float) -> tuple[dict, WorkerSpec]:
    """One engine's worker: its result (``{"error": why}`` when it failed) and the spec it ran.

    ggml's AMX matmul segfaults on some AMX machines (ggml-org/llama.cpp#20824): a llama.cpp
    worker that dies of SIGSEGV runs again with ``use_extra_bufts=False`` (the returned spec),
    and its notes say so.
    """
    if "llamacpp" in (spec.engine, spec.options.get("peer")) and util.find_spec("llama_cpp") is None:
        return {"error": LLAMACPP_MISSING}, spec
    outcome = run_worker(spec, timeout_s)
    if spec.engine == "llamacpp" and outcome.returncode == -signal.SIGSEGV:
        print("[llamacpp] segfaulted with its defaults; again with use_extra_bufts=False", file=sys.stderr)
        spec = dataclasses.replace(spec, options={**spec.options, "use_extra_bufts": False})
        outcome = run_worker(spec, timeout_s)
        if outcome.result:
            outcome.result["notes"].append(
                "with its defaults it segfaulted (ggml_backend_amx_mul_mat, ggml-org/llama.cpp#20824); "
                "measured with use_extra_bufts=False, which turns off its AMX and CPU-repack weight buffers")
    return (outcome.result if outcome.result is not None else {"error": outcome.error}), spec


def run_bandwidth(base: WorkerSpec) -> dict:
    """The memory read bandwidth, measured in a worker of its own (``enginebench.bandwidth``)."""
    outcome = run_worker(dataclasses.replace(base, engine="bandwidth"), timeout_s=600)
    return outcome.result["info"] if outcome.result else {"error": outcome.error}


def worker_main(spec_path: str, out_path: str) -> None:
    spec = WorkerSpec.from_json(Path(spec_path).read_text())
    result = importlib.import_module(MODULES[spec.engine]).measure(spec)
    Path(out_path).write_text(json.dumps(result))


def _tail(lines: list[str], returncode: int) -> str:
    lines = [line for line in lines if line.strip()]
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}" + (f": {lines[-1]}" if lines else "")
    return lines[-1] if lines else f"exit status {returncode}"
