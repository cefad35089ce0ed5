"""Linear layers over weights already in their runtime form.

Each layer owns its weights; the loader hands it tensors in the form the precision plan
chose. ``Linear`` is a dense GEMM; ``NativeLinear`` runs the native kernels
(``mcp.engine.kernels``: grouped int4 or int8, exact weights, fp32 sums) for few rows
(decode) and a dense GEMM over tiles of the weight dequantized in turn for many rows
(prefill, no dense copy held unless cached); ``Int4Linear``
and ``Int8Linear`` do the same with PyTorch's packed int4 and weight-only int8 kernels.
``LinearGroup`` is several projections of the same input (q/k/v, gate/up) returning one
concatenated output: packed members are fused into one matrix at load, so a step makes one
kernel call where it made three. Outputs come back in the activations' dtype.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from mcp.engine.kernels import QuantMatrix, join_rows
from mcp.engine.layers.embedding import Embedding
from mcp.engine.quant import int4pack, int8
from mcp.engine.quant.int4pack import ROW_ALIGN

_NATIVE_DTYPES = (torch.float32, torch.bfloat16)
# Dequantized weight per prefill tile: small against a matrix (a 1B model's gate/up is 64 MB in
# bf16), large enough that each GEMM call keeps the whole GEMM's speed. Narrow tiles lose (each
# call packs its operands anew, we suppose): on AMD Zen 4 (AVX512-BF16, 2 threads) a 512 x 2048 x 16384
# bf16 GEMM ran 5x slower in 1 MB tiles (256 rows), 1.7x in 4 MB ones and as fast as one call in
# 16 MB ones;
# with 8 MB tiles a 512-token prefill of a 1B-shaped model ran within the noise of the whole-matrix
# path (18-22 tok/s both, 2026-12-07, a shared machine).
PREFILL_TILE_BYTES = 8 << 20


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)  # [out, in]
        self.bias = None if bias is None else torch.nn.Parameter(bias.to(weight.dtype), requires_grad=False)
        self.out_features = weight.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _dense(x.to(self.weight.dtype), self.weight, self.bias)
        return out.to(x.dtype)


class PackedLinear(torch.nn.Module, abc.ABC):
    """A weight-only quantized layer: its packed kernel for up to ``decode_max_rows`` rows,
    a ``prefill_dtype`` GEMM above. The prefill GEMM reads the packed weight: tiles of
    ``prefill_tile_rows`` rows are dequantized in turn into one small buffer and multiplied
    there, so no dense copy of the matrix exists (a whole-model one more than doubled peak
    memory); ``cache_dense`` keeps one instead (opt-in, counted in ``prefill_cache``)."""

    def __init__(self, out_features: int, in_features: int, bias: torch.Tensor | None,
                 prefill_dtype: torch.dtype, decode_max_rows: int) -> None:
        super().__init__()
        self.out_features, self.in_features = out_features, in_features
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)
        self.prefill_dtype = prefill_dtype
        self.decode_max_rows = decode_max_rows
        # a buffer, so that buffers() and memory accounting (weight_bytes) count the copy
        self.register_buffer("prefill_cache", None, persistent=False)

    @abc.abstractmethod
    def packed_mm(self, x: torch.Tensor) -> torch.Tensor:
        """x [M, K] -> [M, N] on the packed weight (in the kernel's output dtype)."""

    @abc.abstractmethod
    def dense_rows(self, start: int, stop: int, out: torch.Tensor) -> None:
        """Rows [start, stop) of the weight in ``prefill_dtype``, as the packed kernel sees
        them, written into ``out`` [stop - start, K]; start and stop are multiples of
        ``ROW_ALIGN`` (or stop is N)."""

    def dense_weight(self) -> torch.Tensor:
        """The whole weight [N, K] in ``prefill_dtype`` (a new tensor)."""
        out = torch.empty(self.out_features, self.in_features, dtype=self.prefill_dtype)
        self.dense_rows(0, self.out_features, out)
        return out

    def cache_dense(self) -> None:
        self.prefill_cache = self.dense_weight()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // self.in_features
        x2d = x.reshape(rows, self.in_features)
        if rows > self.decode_max_rows:
            out = self.prefill_mm(x2d.to(self.prefill_dtype))
        else:
            out = self.packed_mm(x2d)
        out = out.view(*x.shape[:-1], self.out_features).to(x.dtype)
        return out if self.bias is None else out + self.bias.to(x.dtype)

    def prefill_mm(self, x: torch.Tensor) -> torch.Tensor:
        """x [M, K] in ``prefill_dtype`` -> x @ W.T [M, N]: on the cached dense weight when
        there is one, else tile by tile, each tile's GEMM writing its columns of the output."""
        if self.prefill_cache is not None:
            return F.linear(x, self.prefill_cache)
        n, k = self.out_features, self.in_features
        out = torch.empty(x.shape[0], n, dtype=x.dtype)
        tile = prefill_tile_rows(k, x.dtype)
        buffer = torch.empty(min(tile, n), k, dtype=x.dtype)
        for start in range(0, n, tile):
            stop = min(n, start + tile)
            weight = buffer[:stop - start]
            self.dense_rows(start, stop, weight)
            torch.mm(x, weight.t(), out=out[:, start:stop])
        return out

    def _fused_options(self, parts: Sequence[PackedLinear]) -> dict:
        return {"bias": _fused_bias(parts), "prefill_dtype": self.prefill_dtype,
                "cache_dense": any(p.prefill_cache is not None for p in parts),
                "decode_max_rows": self.decode_max_rows}


def prefill_tile_rows(in_features: int, dtype: torch.dtype) -> int:
    """Weight rows per prefill tile: about ``PREFILL_TILE_BYTES`` of dequantized weight, in
    whole ``ROW_ALIGN`` blocks (what every packed layout can slice)."""
    rows = PREFILL_TILE_BYTES // (in_features * dtype.itemsize)
    return max(ROW_ALIGN, rows // ROW_ALIGN * ROW_ALIGN)


class NativeLinear(PackedLinear):
    """A grouped int4 or int8 weight (``QuantMatrix``) on the native kernels: the decode
    path takes fp32 or bf16 activations as they are and returns them in the same dtype,
    with exact fp32 products or, ``x_digits`` 1 or 2, activations quantized to that many int8
    digits per block and integer products (``QuantMatrix.matmul``)."""

    def __init__(self, matrix: QuantMatrix, bias: torch.Tensor | None, prefill_dtype: torch.dtype,
                 cache_dense: bool, decode_max_rows: int, x_digits: int = 0) -> None:
        n, k = matrix.shape
        super().__init__(n, k, bias, prefill_dtype, decode_max_rows)
        self.matrix = matrix
        self.x_digits = x_digits
        # registered so that module introspection (buffers(), memory accounting) sees them
        self.register_buffer("codes", matrix.codes, persistent=False)
        self.register_buffer("qparams", matrix.qparams, persistent=False)
        if cache_dense:
            self.cache_dense()

    @classmethod
    def fuse(cls, parts: Sequence[NativeLinear]) -> NativeLinear:
        return cls(QuantMatrix.concat([p.matrix for p in parts]), x_digits=parts[0].x_digits,
                   **parts[0]._fused_options(parts))

    def packed_mm(self, x: torch.Tensor) -> torch.Tensor:
        return self.matrix.matmul(x if x.dtype in _NATIVE_DTYPES else x.to(torch.float32), x_digits=self.x_digits)

    def interleave(self) -> bool:
        """Re-lay a GGUF 4-, 5-, 6-bit or Q8_0 matrix 16 rows at a time when it multiplies with
        integer dots (``QuantMatrix.interleaved``: the same values, ~3.5x the one-row dots'
        speed on an AVX-512 VNNI core); its source pages are released as it goes. False where
        it does not apply."""
        matrix = self.matrix
        if self.x_digits == 0 or not matrix.interleavable:
            return False
        self.matrix = matrix.interleaved()
        self.register_buffer("codes", self.matrix.codes, persistent=False)
        self.register_buffer("qparams", None, persistent=False)
        return True

    def dense_rows(self, start: int, stop: int, out: torch.Tensor) -> None:
        if out.dtype in _NATIVE_DTYPES:
            self.matrix.dequantize_rows(start, stop, out)
        else:
            out.copy_(self.matrix.dequantize_rows(start, stop, torch.empty(stop - start, self.in_features)))


def interleave_for_integer_dots(model: torch.nn.Module) -> int:
    """Interleave every native GGUF 4-, 5-, 6-bit or Q8_0 matrix that multiplies with integer dots, after the
    model's projections were fused (a fused matrix is re-laid once); how many were."""
    re_laid = {}
    for module in model.modules():
        if isinstance(module, NativeLinear):
            before = module.matrix
            if module.interleave():
                re_laid[id(before)] = module.matrix
    for module in model.modules():  # a tied embedding looks up in its head's matrix
        if isinstance(module, Embedding) and id(module.matrix) in re_laid:
            module.use(re_laid[id(module.matrix)])
    return len(re_laid)


class Int4Linear(PackedLinear):
    """Weight-only int4, group 32: ``torch._weight_int4pack_mm_for_cpu``."""

    def __init__(
        self,
        packed: torch.Tensor,  # uint8 [N, K/2] in ``layout``'s byte order
        scale_zero: torch.Tensor,  # bf16 [K/32, N, 2]: w = (q - 8) * scale + zero
        layout: str,
        bias: torch.Tensor | None,
        prefill_dtype: torch.dtype,
        cache_dense: bool,
        decode_max_rows: int,
    ) -> None:
        super().__init__(packed.shape[0], packed.shape[1] * 2, bias, prefill_dtype, decode_max_rows)
        self.register_buffer("packed", packed, persistent=False)
        self.register_buffer("scale_and_zero", scale_zero, persistent=False)
        self._layout = layout
        if cache_dense:
            self.cache_dense()

    @classmethod
    def fuse(cls, parts: Sequence[Int4Linear]) -> Int4Linear:
        """One layer computing every part's outputs, concatenated in order (same kernel results)."""
        return cls(join_rows([p.packed for p in parts]),  # rows are whole layout blocks (ROW_ALIGN)
                   torch.cat([p.scale_and_zero for p in parts], dim=1), parts[0]._layout,
                   **parts[0]._fused_options(parts))

    def packed_mm(self, x: torch.Tensor) -> torch.Tensor:  # bf16 activations: the kernel's fast path
        return torch._weight_int4pack_mm_for_cpu(x.to(torch.bfloat16), self.packed, int4pack.GROUP_SIZE,
                                                 self.scale_and_zero)

    def dense_rows(self, start: int, stop: int, out: torch.Tensor) -> None:  # layout blocks: ROW_ALIGN rows
        out.copy_(int4pack.dequantize_kernel_form(self.packed[start:stop], self._layout,
                                                  self.scale_and_zero[:, start:stop]))


class Int8Linear(PackedLinear):
    """Weight-only int8, a scale per output row: ``torch._weight_int8pack_mm``."""

    def __init__(
        self,
        codes: torch.Tensor,  # int8 [N, K]
        scales: torch.Tensor,  # [N]: w = scales[n] * codes[n, k]; kept in bf16, as the kernel reads them
        bias: torch.Tensor | None,
        prefill_dtype: torch.dtype,
        cache_dense: bool,
        decode_max_rows: int,
    ) -> None:
        super().__init__(codes.shape[0], codes.shape[1], bias, prefill_dtype, decode_max_rows)
        self.register_buffer("codes", codes, persistent=False)
        self.register_buffer("scales", scales.to(torch.bfloat16), persistent=False)
        if cache_dense:
            self.cache_dense()

    @classmethod
    def fuse(cls, parts: Sequence[Int8Linear]) -> Int8Linear:
        return cls(torch.cat([p.codes for p in parts]), torch.cat([p.scales for p in parts]),
                   **parts[0]._fused_options(parts))

    def packed_mm(self, x: torch.Tensor) -> torch.Tensor:
        return torch._weight_int8pack_mm(x.to(torch.bfloat16), self.codes, self.scales)

    def dense_rows(self, start: int, stop: int, out: torch.Tensor) -> None:
        out.copy_(int8.dequantize(self.codes[start:stop], self.scales[start:stop]))


class LinearGroup(torch.nn.Module):
    """Projections of one input, output concatenated [..., sum of out_features].

    Packed parts of one kind (all int4, or all int8) become one fused matrix; otherwise the
    parts stay separate matrices (so dense weights are used from the memory map as they are
    and each GEMM is the one a lone layer would run) and their outputs are concatenated.
    ``sizes`` names the projections of a matrix the file already stores fused (Phi-3's
    qkv_proj, gate_up_proj): one part, used as loaded, its outputs those projections in order.
    """

    def __init__(self, parts: Sequence[torch.nn.Module], sizes: Sequence[int] | None = None) -> None:
        super().__init__()
        self.sizes = [p.out_features for p in parts] if sizes is None else list(sizes)
        if sum(self.sizes) != sum(p.out_features for p in parts):
            raise ValueError(f"projections of {self.sizes} outputs cannot split parts of "
                             f"{[p.out_features for p in parts]}")
        kinds = {type(p) for p in parts}
        if kinds == {NativeLinear} and len({p.matrix.kind for p in parts}) == 1 or \
                len(kinds) == 1 and kinds <= {Int4Linear, Int8Linear}:
            self.parts = torch.nn.ModuleList([kinds.pop().fuse(parts)])
        else:
            self.parts = torch.nn.ModuleList(parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if len(self.parts) == 1:
            return self.parts[0](x)
        return torch.cat([part(x) for part in self.parts], dim=-1)


def _fused_bias(parts: Sequence[torch.nn.Module]) -> torch.Tensor | None:
    if all(p.bias is None for p in parts):
        return None
    return torch.cat([p.bias if p.bias is not None else torch.zeros(p.out_features) for p in parts])


def _dense(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x [..., K] @ weight.T; one bf16/f16 row goes to ``mv`` (F.linear is ~4x slower there)."""
    if x.dtype != torch.float32 and x.numel() == x.shape[-1]:
        out = torch.mv(weight, x.reshape(-1)).view(*x.shape[:-1], weight.shape[0])
        return out if bias is None else out + bias
    return F.linear(x, weight, bias)
