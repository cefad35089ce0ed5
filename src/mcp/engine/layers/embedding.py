"""Token embeddings: a lookup in a dense table, or in a grouped int8 matrix (the Q8_0 table
that the tied output head multiplies with), so a tied model holds its table once."""

from __future__ import annotations

import torch

from mcp.engine.kernels import QuantMatrix


class Embedding(torch.nn.Module):
    def __init__(self, table: torch.Tensor | QuantMatrix) -> None:
        super().__init__()
        if isinstance(table, QuantMatrix):
            self.matrix: QuantMatrix | None = table
            self.register_buffer("table", None, persistent=False)
            self.register_buffer("codes", table.codes, persistent=False)
            self.register_buffer("qparams", table.qparams, persistent=False)
            self._device = table.codes.device
        else:
            self.matrix = None
            self.register_buffer("table", table, persistent=False)  # [vocab, hidden]
            self._device = table.device

    def use(self, matrix: QuantMatrix) -> None:
        """Look up in ``matrix`` from now on: the same values re-laid (a tied head's matrix
        interleaved for its integer dots), so that the table is still held once."""
        self.matrix = matrix
        self.register_buffer("codes", matrix.codes, persistent=False)
        self.register_buffer("qparams", matrix.qparams, persistent=False)

    @property
    def device(self) -> torch.device:
        return self._device

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids [...] -> rows [..., hidden]: the table's dtype, or fp32 from int8."""
        if self.matrix is not None:
            return self.matrix.rows(ids)
        return torch.nn.functional.embedding(ids, self.table)
