"""Turning the tensors of a ``.mcp`` file into runtime weights, as the precision plan says.

Dense tensors already in the planned dtype stay in the file's memory map (zero copy: a
warm load reads nothing); packed int4 tensors in the runtime kernel's byte order, grouped
int8 tensors and GGUF's 4/5/6-bit blocks planned for their native kernels are used as stored. Anything else is converted once at load: GGUF 4-bit blocks planned for an int4 kernel
are re-laid as int4, other blocks are dequantized, dense tensors are cast, and a tensor
planned as int8 is quantized from its dequantized values.
"""

from __future__ import annotations

import torch

from mcp.engine.kernels import TILE_ROWS, QuantMatrix, release_pages
from mcp.engine.layers.embedding import Embedding
from mcp.engine.layers.linear import Int4Linear, Int8Linear, Linear, NativeLinear
from mcp.engine.precision import BLOCK_KERNELS, DOT_DIGITS, NATIVE_KERNELS, SENSITIVE, TORCH_DTYPES, ResolvedPlan
from mcp.engine.quant import int4pack, int8
from mcp.engine.quant.dequant import dequantize
from mcp.modelfile.reader import ModelFile
from mcp.modelfile.spec import (DENSE_ENCODINGS, INT4_ENCODING, INT8_ENCODING, QPARAMS_SUFFIX, SCALE_ZERO_SUFFIX,
                                TensorSpec)


class ModelWeights:
    """Hands each layer its weights in the planned form; each layer takes only its own."""

    def __init__(self, model_file: ModelFile, plan: ResolvedPlan, device: torch.device,
                 cache_prefill_weights: bool = False) -> None:
        self._file = model_file
        self._specs = {spec.name: spec for spec in model_file.header.tensors}
        self._plan = plan
        self._device = device
        self._cache_prefill = cache_prefill_weights
        self._dense: dict[str, torch.Tensor] = {}
        self._quant: dict[str, QuantMatrix] = {}  # shared by a tied embedding and head

    def has(self, name: str) -> bool:
        return name in self._specs

    def get(self, name: str) -> torch.Tensor | None:
        return self.tensor(name) if name in self._specs else None

    def tensor(self, name: str) -> torch.Tensor:
        """A dense tensor: fp32 for 1-D ones, else the precision of its decode kernel."""
        if name not in self._dense:
            spec = self._specs[name]
            plan = self._plan.by_tensor.get(name)
            dtype = TORCH_DTYPES[plan.decode.removeprefix("dense-")] if plan and plan.decode.startswith("dense-") else torch.float32
            self._dense[name] = self._dense_value(spec, dtype)
        return self._dense[name]

    def embedding(self, name: str) -> Embedding:
        """The token embedding: over the int8 or GGUF block matrix when the head runs it, else dense."""
        plan = self._plan.by_tensor.get(name)
        if plan is not None and plan.decode in ("mcp-int8", *BLOCK_KERNELS.values()):
            return Embedding(self._quant_matrix(self._specs[name]))
        return Embedding(self.tensor(name))

    def linear(self, prefix: str) -> torch.nn.Module:
        """The module for ``{prefix}.weight`` (and ``{prefix}.bias`` when there is one)."""
        name = f"{prefix}.weight"
        bias = self.get(f"{prefix}.bias")
        plan = self._plan.by_tensor[name]
        if plan.decode.startswith("dense-"):
            return Linear(self.tensor(name), bias)
        options = {"bias": bias, "prefill_dtype": TORCH_DTYPES[plan.prefill.removeprefix("dense-")],
                   "cache_dense": self._cache_prefill, "decode_max_rows": self._plan.decode_max_rows}
        if plan.decode in NATIVE_KERNELS:
            matrix = self._quant_matrix(self._specs[name])
            if name not in SENSITIVE:  # held by its layer alone: a fused matrix's copy replaces the parts
                self._quant.pop(name, None)
            return NativeLinear(matrix, x_digits=self._digits(name), **options)
        if plan.decode == "int8pack":
            codes, scales = int8.quantize(self._dense_value(self._specs[name], torch.float32))
            return Int8Linear(codes, scales, **options)
        packed, scale_zero = self._int4(self._specs[name])
        return Int4Linear(packed, scale_zero, layout=int4pack.torch_layout(), **options)

    def _digits(self, name: str) -> int:
        """The int8 digits the native kernels quantize activations to for ``name`` (0: exact
        dots); int8 dots leave the sensitive output head exact, two digits are fine enough for it."""
        dots = self._plan.decode_dots
        return DOT_DIGITS["exact" if dots == "int8" and name in SENSITIVE else dots]

    def _dense_value(self, spec: TensorSpec, dtype: torch.dtype) -> torch.Tensor:
        stored = self._file.tensor(spec.name)
        if spec.encoding in DENSE_ENCODINGS:
            if stored.dtype == dtype and self._device.type == "cpu":
                return stored  # the memory map itself; weights are never written
            return stored.to(device=self._device, dtype=dtype)
        if spec.encoding == INT4_ENCODING:  # the exact values, from the f32 scale/offset
            codes = int4pack.unpack(stored, spec.layout or int4pack.runtime_layout())
            values = int4pack.dequantize_int4(codes, self._file.tensor(spec.name + QPARAMS_SUFFIX))
            return values.to(device=self._device, dtype=dtype)
        if spec.encoding == INT8_ENCODING:
            values = int8.dequantize_grouped(stored, self._file.tensor(spec.name + QPARAMS_SUFFIX))
            return values.to(device=self._device, dtype=dtype)
        return dequantize(stored, spec.encoding, spec.shape, dtype=torch.float32).to(device=self._device, dtype=dtype)

    def _int4(self, spec: TensorSpec) -> tuple[torch.Tensor, torch.Tensor]:
        """Packed codes in this CPU's layout and the kernel's scale_and_zero bf16 [K/32, N, 2]."""
        stored = self._file.tensor(spec.name)
        wanted = int4pack.torch_layout()
        if spec.encoding == "int4":
            scale_zero = self._file.tensor(spec.name + SCALE_ZERO_SUFFIX)
            int4pack.check_packed(spec.name, stored, scale_zero, spec.shape)
            return int4pack.repack(stored, spec.layout or wanted, wanted), scale_zero
        codes, scale_offset = int4pack.codes_from_blocks(stored, spec.encoding, spec.shape)
        return int4pack.pack(codes, wanted), int4pack.kernel_scale_and_zero(scale_offset, torch.bfloat16)

    def _quant_matrix(self, spec: TensorSpec) -> QuantMatrix:
        """The native kernels' form of a 4-bit, Q8_0 or 5/6-bit block tensor, as stored when it is already."""
        if spec.name not in self._quant:
            stored = self._file.tensor(spec.name)
            if spec.encoding in BLOCK_KERNELS:  # GGUF's blocks as the file holds them
                matrix = QuantMatrix(spec.encoding, stored, None)
            elif spec.encoding == INT8_ENCODING:
                matrix = QuantMatrix("int8", stored, self._file.tensor(spec.name + QPARAMS_SUFFIX))
            elif spec.encoding == "q8_0" and self._digits(spec.name) and spec.shape[0] % TILE_ROWS == 0:
                # integer dots: re-laid 16 rows at a time straight from the file's blocks
                matrix = QuantMatrix.interleaved_q8_0(stored, spec.shape)  # the file's pages released
            elif spec.encoding == "q8_0":  # codes and scales apart (a copy): the file's pages go back
                matrix = QuantMatrix("int8", *int8.codes_from_q8_0(stored, spec.shape))
                release_pages(stored)
            elif spec.encoding == INT4_ENCODING:
                codes = int4pack.repack(stored, spec.layout or "rows", "rows")
                matrix = QuantMatrix("int4", codes.contiguous(), self._file.tensor(spec.name + QPARAMS_SUFFIX))
            else:
                codes, qparams = int4pack.codes_from_blocks(stored, spec.encoding, spec.shape)
                matrix = QuantMatrix("int4", int4pack.pack(codes, "rows"), qparams.contiguous())
            self._quant[spec.name] = matrix
        return self._quant[spec.name]
