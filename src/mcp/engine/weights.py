"""Turning the tensors of a ``.mcp`` file into runtime weights on a device."""

from __future__ import annotations

import torch

from mcp.engine.precision import TORCH_DTYPES, ResolvedPlan, precision_for
from mcp.engine.quant.dequant import dequantize
from mcp.modelfile.reader import ModelFile
from mcp.modelfile.spec import DENSE_ENCODINGS, PrecisionPlan


def resolve_plan(model_file: ModelFile, plan: PrecisionPlan) -> ResolvedPlan:
    names = (spec.name for spec in model_file.header.tensors)
    return ResolvedPlan({name: precision_for(plan, name) for name in names})


def load_weights(
    model_file: ModelFile, plan: ResolvedPlan, device: torch.device
) -> dict[str, torch.Tensor]:
    """Every tensor of the file, decoded to its planned dtype, on ``device``."""
    weights = {}
    for spec in model_file.header.tensors:
        dtype = TORCH_DTYPES[plan.by_tensor[spec.name]]
        stored = model_file.tensor(spec.name)
        if spec.encoding in DENSE_ENCODINGS:
            # .to() would alias the read-only mmap when the dtype already matches; copy instead.
            tensor = stored.to(device=device, dtype=dtype, copy=True)
        else:
            tensor = dequantize(stored, spec.encoding, spec.shape, dtype=torch.float32)
            tensor = tensor.to(device=device, dtype=dtype)
        weights[spec.name] = tensor
    return weights
