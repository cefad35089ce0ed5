"""The lean decoder: a ``.mcp`` model run one sequence at a time without importing torch.

``import torch`` alone makes a process about 220 MiB resident before any model is loaded,
more than the whole of a small quantized model; on a device with little memory that is the
difference between fitting and not. The native kernels need no torch (they take raw
pointers), so this package loads a ``.mcp`` with numpy views of its memory map and runs
the same native decode step and output head the PyTorch engine runs, for one sequence.

    from mcp.engine.lean import LeanModel
    model = LeanModel("model.mcp", num_threads=2)
    print(model.infer("Tell me about the moon.", max_tokens=64, temperature=0).text)

It is for one user on a small machine (a CLI, an app, an edge box): no batching, no
scheduler, no governance hooks. For serving, batching and everything else use
``mcp.runtime.Session``. See docs/lean.md.
"""

from mcp.engine.lean.model import LeanModel

__all__ = ["LeanModel"]
