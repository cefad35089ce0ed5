"""This machine's memory read bandwidth: a sum over an array far larger than the caches.

torch sums with the benchmark's thread count (as the engines run); numpy's sum is one
thread. The best of several passes is the figure (noise only ever slows a pass down).
"""

from __future__ import annotations

from enginebench.measure import now
from enginebench.spec import WorkerSpec

PASSES = 7


def measure(spec: WorkerSpec) -> dict:
    import numpy
    import torch

    torch.set_num_threads(spec.threads)
    count = spec.settings.bandwidth_mib * 2**20 // 4
    array = torch.ones(count, dtype=torch.float32)
    nbytes = array.numel() * array.element_size()
    info = {
        "torch_gbps": _best(lambda: array.sum().item(), nbytes),
        "numpy_gbps": _best(lambda: float(array.numpy().sum()), nbytes),
        "array_mib": nbytes / 2**20,
        "torch_threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
    }
    return {"figures": {}, "info": info, "notes": [], "methods": {}}


def _best(read_all, nbytes: int) -> float:
    read_all()  # page in, warm up
    seconds = []
    for _ in range(PASSES):
        started = now()
        read_all()
        seconds.append(now() - started)
    return nbytes / min(seconds) / 1e9
