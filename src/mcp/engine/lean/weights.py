"""A ``.mcp`` file's weights as numpy views of one private memory map, in the native step's form.

The lean decoder reads the matrices exactly as the default compile writes them for the
native kernels: int4 codes in row order with (scale, offset) qparams per group of 32, int8
codes with a scale per group, GGUF's Q4_0/Q4_1/Q4_K/Q5_0/Q5_1/Q5_K/Q6_K blocks as stored, float32 norms. Nothing is repacked or dequantized at load, so
a load maps the file and reads the tokenizer; a file in another form (4-bit or Q8_0 GGUF
blocks kept as they were, torch's int4pack layout, dense matrices) is refused with what to do instead.
Tensors that lie back to back in the file (a layer's q/k/v, its gate/up) are used as one
matrix without a copy, as the PyTorch loader does (``kernels.join_rows``); where their kinds
differ (a Q4_K_M file's Q4_K q/k and Q6_K v) the step takes them as parts of one matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mcp.base.errors import ModelFormatError
from mcp.engine.lean import native
from mcp.modelfile.layout import FileLayout
from mcp.modelfile.spec import BLOCK_ENCODINGS, INT4_ENCODING, INT8_ENCODING, QPARAMS_SUFFIX, ArchitectureConfig

GROUP_SIZE = 32
BLOCK_KINDS = ("q5_0", "q5_1", "q5_k", "q6_k", "q4_0", "q4_1", "q4_k")  # GGUF blocks the kernels read as stored
KINDS = {INT4_ENCODING: 0, INT8_ENCODING: 1, **{kind: 2 + i for i, kind in enumerate(BLOCK_KINDS)}}  # WeightKind
MAX_PARTS = 3  # parts of one matrix in the step's table (csrc/decode.h kMaxParts)
_NUMPY = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "U8": np.uint8, "I8": np.int8}


def address(array: np.ndarray) -> int:
    """The address of an array's first element, as the kernels take it."""
    return array.__array_interface__["data"][0]


@dataclass(frozen=True)
class Matrix:
    """A quantized weight [N, K] in the native kernels' form (``mcp.engine.kernels.QuantMatrix``)."""

    kind: str  # "int4" | "int8" | a GGUF block kind (BLOCK_KINDS)
    codes: np.ndarray  # int4: uint8 [N, K/2]; int8: int8 [N, K]; blocks: uint8 [N, row bytes]
    qparams: np.ndarray | None  # int4: [N, K/32, 2] (scale, offset); int8: [N, K/32] scale; f32 or f16; blocks: None

    @property
    def shape(self) -> tuple[int, int]:
        n, width = self.codes.shape
        if self.kind in BLOCK_KINDS:
            weights, nbytes = BLOCK_ENCODINGS[self.kind]
            return n, width // nbytes * weights
        return n, width * 2 if self.kind == INT4_ENCODING else width

    @property
    def arrays(self) -> list[np.ndarray]:
        return [self.codes] if self.qparams is None else [self.codes, self.qparams]

    def pointers(self) -> list[int]:
        """kind, codes, qparams (0: none), qparams_f16: how the kernels take the matrix."""
        if self.qparams is None:
            return [KINDS[self.kind], address(self.codes), 0, 0]
        return [KINDS[self.kind], address(self.codes), address(self.qparams), int(self.qparams.dtype == np.float16)]

    def rows(self, ids: list[int]) -> np.ndarray:
        """Rows ``ids`` as contiguous float32 [len(ids), K]: an embedding lookup, the values
        ``QuantMatrix.rows`` gives."""
        index = np.asarray(ids, dtype=np.int64)
        if self.kind in BLOCK_KINDS:  # those rows' blocks, decoded by the kernels
            picked = np.ascontiguousarray(self.codes[index])
            out = np.empty((len(ids), self.shape[1]), dtype=np.float32)
            native.load().dequantize(KINDS[self.kind], address(picked), 0, 0, len(ids), self.shape[1], address(out),
                                     0, 1, 0)
            return out
        scales = self.qparams[index].astype(np.float32)
        if self.kind == INT8_ENCODING:  # [M, K/32, 32] * [M, K/32, 1]
            values = self.codes[index].astype(np.float32).reshape(len(ids), -1, GROUP_SIZE) * scales[..., None]
        else:  # byte j of a group: element j in its low nibble, j + 16 in its high one
            packed = self.codes[index].reshape(len(ids), -1, GROUP_SIZE // 2)
            codes = np.concatenate((packed & 0x0F, packed >> 4), axis=-1).astype(np.float32)
            values = codes * scales[..., 0:1] + scales[..., 1:2]
        return np.ascontiguousarray(values.reshape(len(ids), -1))


def table_fields(parts: list[Matrix]) -> list[int]:
    """A matrix of 1 to MAX_PARTS parts stacked by rows as the step's layer table holds it
    (csrc/module.cpp read_matrix): parts, N, K, then (kind, codes, qparams, qparams_f16, rows)
    per part, unused parts zero."""
    fields = [len(parts), sum(p.shape[0] for p in parts), parts[0].shape[1]]
    for part in parts:
        fields += [*part.pointers(), part.shape[0]]
    return fields + [0] * 5 * (MAX_PARTS - len(parts))


class FileWeights:
    """Views of the tensors of a checked ``.mcp`` file (``layout.read_layout``)."""

    def __init__(self, layout: FileLayout) -> None:
        self.layout = layout
        self.specs = {spec.name: spec for spec in layout.header.tensors}
        try:  # private, copy on write: writing a view never changes the file
            self.mapping = np.memmap(layout.path, dtype=np.uint8, mode="c")
        except (OSError, ValueError) as exc:
            raise ModelFormatError(f"{layout.path}: cannot map the file into memory ({exc})") from None

    def array(self, name: str) -> np.ndarray:
        """The stored array of ``name`` (dense: its dtype and shape; bf16 as raw uint16)."""
        dtype_name, shape = self.layout.stored[name]
        start, end = self.layout.offsets[name]
        dtype = np.dtype(_NUMPY[dtype_name])
        raw = self.mapping[start:end]
        if start % dtype.itemsize:  # another writer's unaligned tensor: a copy
            raw = raw.copy()
        return raw.view(dtype).reshape(shape)

    def vector(self, name: str) -> np.ndarray:
        """A dense tensor as contiguous float32 (norm weights and biases); a copy unless stored so."""
        spec = self.specs[name]
        stored = self.array(name)
        if spec.encoding == "f32":
            return stored
        if spec.encoding == "f16":
            return stored.astype(np.float32)
        if spec.encoding == "bf16":
            return (stored.astype(np.uint32) << 16).view(np.float32)
        raise ModelFormatError(f"{self.layout.path}: tensor {name} is stored as {spec.encoding}; the lean decoder "
                               "reads norm weights and biases stored dense (f32, f16 or bf16)")

    def matrix(self, name: str) -> Matrix:
        """``name`` as a native matrix, when the file holds it in that form already."""
        spec = self.specs[name]
        if spec.encoding not in KINDS or (spec.encoding == INT4_ENCODING and spec.layout not in (None, "rows")):
            form = spec.encoding + (f" in the {spec.layout} layout" if spec.layout else "")
            raise ModelFormatError(
                f"{self.layout.path}: tensor {name} is stored as {form}; the lean decoder reads the matrices as "
                "the compiler stores them for the native kernels: int4 in row order (`--precision int4`), "
                "int8 (from Q8_0) and Q4_0/Q4_1/Q4_K/Q5_0/Q5_1/Q5_K/Q6_K blocks, which `mcp2026 pull` and `mcp2026 compile` of a 4-bit GGUF write with the default "
                "precision (auto). Run this file with mcp.runtime.Session (the PyTorch engine), which converts it "
                "at load")
        if spec.encoding in BLOCK_KINDS:
            return Matrix(spec.encoding, self.array(name), None)
        return Matrix(spec.encoding, self.array(name), self.array(name + QPARAMS_SUFFIX))

    def stacked(self, names: list[str]) -> list[Matrix]:
        """The named matrices' rows in order as one matrix (views when they lie back to back in
        the file, else one copy), or as parts where their kinds differ."""
        parts = [self.matrix(name) for name in names]
        kinds = {part.kind for part in parts}
        if len(kinds) != 1:
            return parts
        if parts[0].qparams is None:
            return [Matrix(kinds.pop(), self._join([p.codes for p in parts]), None)]
        dtypes = {part.qparams.dtype for part in parts}
        qdtype = dtypes.pop() if len(dtypes) == 1 else np.dtype(np.float32)  # f16 values are exact in f32
        return [Matrix(kinds.pop(), self._join([p.codes for p in parts]),
                       self._join([p.qparams.astype(qdtype, copy=False) for p in parts]))]

    def _join(self, arrays: list[np.ndarray]) -> np.ndarray:
        """``np.concatenate`` along rows; a view of the memory map when the arrays lie back to back in it."""
        first = arrays[0]
        cursor = address(first)
        for array in arrays:
            if (array.dtype != first.dtype or array.shape[1:] != first.shape[1:] or not array.flags.c_contiguous
                    or address(array) != cursor):
                return np.concatenate(arrays)
            cursor += array.nbytes
        start = address(first) - address(self.mapping)
        if not 0 <= start < self.mapping.nbytes:  # copies (an unaligned or converted tensor)
            return np.concatenate(arrays)
        rows = sum(array.shape[0] for array in arrays)
        return np.ndarray((rows, *first.shape[1:]), dtype=first.dtype, buffer=self.mapping, offset=start)


def inverse_frequencies(arch: ArchitectureConfig, freq_factors: np.ndarray | None = None) -> np.ndarray:
    """RoPE inverse frequencies [head_dim / 2] float32, scaled as the config asks: the values
    ``layers.rotary.inverse_frequencies`` gives, bit for bit (the power is rounded from float64,
    as torch's is; numpy's float32 power differs in the last bit)."""
    dim = arch.head_dim
    exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim)
    powers = (np.float64(arch.rope_theta) ** exponents.astype(np.float64)).astype(np.float32)
    inv_freq = np.float32(1.0) / powers
    scaling = arch.rope_scaling
    if scaling is None:
        return inv_freq
    if scaling.kind == "linear":
        return inv_freq / np.float32(scaling.factor)
    if scaling.kind == "llama3":
        return _llama3_scaled(inv_freq, scaling)
    if scaling.kind == "freq_factors" and freq_factors is not None:
        return inv_freq / freq_factors.astype(np.float32)
    missing = " (the model.rope_freqs tensor is missing)" if scaling.kind == "freq_factors" else ""
    raise ModelFormatError(f"rope scaling {scaling.kind!r} is not supported by the lean decoder{missing}")


def rope_rows(inv_freq: np.ndarray, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``start``..``stop`` of the rotate-half tables ``layers.rotary`` makes, float32
    [stop - start, head_dim]: ``cat(cos, cos)`` and ``cat(-sin, sin)`` of the same float32
    angles as torch's. cos and sin are rounded from float64: torch's own float32 cos and sin
    differ from these by at most one unit in the last place, in about 5% of entries."""
    positions = np.arange(start, stop, dtype=np.float32)
    angles = np.outer(positions, inv_freq).astype(np.float32).astype(np.float64)
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    return np.concatenate((cos, cos), axis=-1), np.concatenate((-sin, sin), axis=-1)


def _llama3_scaled(inv_freq: np.ndarray, scaling) -> np.ndarray:
    old_context = scaling.original_max_position_embeddings
    low_freq_wavelen = old_context / scaling.low_freq_factor
    high_freq_wavelen = old_context / scaling.high_freq_factor
    wavelen = np.float32(2 * math.pi) / inv_freq
    scaled = np.where(wavelen > low_freq_wavelen, inv_freq / np.float32(scaling.factor), inv_freq)
    smooth = (np.float32(old_context) / wavelen - np.float32(scaling.low_freq_factor)) / np.float32(
        scaling.high_freq_factor - scaling.low_freq_factor)
    smoothed = (1 - smooth) * scaled / np.float32(scaling.factor) + smooth * scaled
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(is_medium, smoothed, scaled).astype(np.float32)
