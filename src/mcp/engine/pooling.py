"""Pooling final hidden states into one embedding per input, as a model's ``Pooling`` says.

The same arithmetic as sentence-transformers' Pooling and Normalize modules: mean over the
input's own tokens (padding excluded), the first token (CLS) or the last one, in fp32, then
L2-normalized where the model asks (``F.normalize``: a zero vector stays zero).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mcp.modelfile.spec import Pooling


def pool(hidden: torch.Tensor, lengths: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """hidden [B, T, H] right-padded, lengths [B] (real tokens of each row) -> fp32 [B, H]."""
    hidden = hidden.to(torch.float32)
    if pooling.mode == "cls":
        pooled = hidden[:, 0]
    elif pooling.mode == "last":
        pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), lengths - 1]
    else:
        mask = (torch.arange(hidden.shape[1], device=hidden.device)[None, :] < lengths[:, None]).to(hidden.dtype)
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
    return F.normalize(pooled, p=2, dim=-1) if pooling.normalize else pooled
