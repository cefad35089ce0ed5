"""Native CPU kernels: products with weight-only quantized matrices, groups of 32 along K.

A ``QuantMatrix`` W [N, K] is either
- int4: codes uint8 [N, K/2], each group of 32 weights in 16 bytes (byte j holds element j
  in its low nibble and element j + 16 in its high one, GGUF's Q4_0/Q4_1 order), and
  qparams [N, K/32, 2] = (scale, offset): w = scale * q + offset;
- int8: codes int8 [N, K] and qparams [N, K/32] = scale: w = scale * q (GGUF's Q8_0).
qparams are float32, or float16 where the source's are (Q4_0, Q4_1, Q8_0): half the bytes
of scales to read per token, the same values.
- q4_0, q4_1, q4_k, q5_0, q5_1, q5_k, q6_k: GGUF's own blocks as the file stores them, codes uint8
  [N, K / block weights * block bytes] and no qparams (None); the kernels decode each block's
  scales, mins and 4/5/6-bit codes in registers, to exactly ``gguf.quants``' values (Q6_K's
  scale per 16 weights and the K-quants' per-sub-block mins included). They always multiply
  exactly (``x_digits`` is ignored: they have no integer dots).
- q4_0x16, q4_1x16, q4_kx16, q5_0x16, q5_1x16, q5_kx16, q6_kx16, q8_0x16: those blocks
  (q8_0x16: the int8 kind with fp16 scales) re-laid 16 rows at a time (``QuantMatrix.interleaved``,
  csrc/rows16.cpp): the same bytes and values, in the order integer dots read at the memory
  bound (each 32-bit lane of a register one row). They multiply with integer dots
  (``x_digits`` 1 or 2); exact products (0) are computed, slowly, from their rows' values.
``W.matmul(x)`` computes x @ W.T for x [..., K] in fp32 or bf16, with the weights
dequantized in registers exactly as ``W.dequantize()`` gives them and fp32 sums; it reads
the quantized bytes once per call however many rows x has, which is what decode needs.
``W.matmul(x, x_digits=1)`` first quantizes each row of x to int8 blocks of 32
(``quantize_activations``: scale max|x|/127, round half to even, as llama.cpp's Q8_0) and
multiplies the codes in integer SIMD (AVX2 ``maddubs``/``madd``), one fp32 multiply-add per
block; the int4 offsets meet the exact fp32 block sums of x. Each output then differs from
the exact product by at most sum over blocks of |scale_g| * (d_g / 2) * sum |q_g| (d_g the
block's activation scale), plus fp32 rounding. ``x_digits=2`` writes each block as two int8
digits, x ~ d * (128 * q1 + q2) (15 bits: d is 128 times finer, so is the bound), and sums
128 * (q . q1) + q . q2 in int32: twice the integer products, still one fp32 multiply-add.

The C++ (``csrc/``) is built by ``pip install`` as ``mcp.engine.kernels._cpu``, with an
AVX-512, an AVX2 and a plain C++ build of each kernel chosen at run time, and splits the
rows of W over ``torch.get_num_threads()`` OpenMP threads: torch's own team, since the
extension's libgomp resolves to the copy torch loaded (torch is imported first, here).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import mmap
import sys
from dataclasses import dataclass

import torch

try:
    from mcp.engine.kernels import _cpu
except ImportError as error:  # a source checkout that was never built
    _cpu = None
    BUILD_ERROR: str | None = f"{error}; run `make install` (or pip install -e .) to build it"
else:
    BUILD_ERROR = None

GROUP_SIZE = 32
_MADV_DONTNEED, _MADV_HUGEPAGE = 4, 14
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None
KIND_CODES = {"int4": 0, "int8": 1, "q5_0": 2, "q5_1": 3, "q5_k": 4, "q6_k": 5, "q4_0": 6, "q4_1": 7, "q4_k": 8,
          "q4_0x16": 9, "q4_1x16": 10, "q4_kx16": 11, "q6_kx16": 12, "q8_0x16": 13, "q5_0x16": 14, "q5_1x16": 15,
          "q5_kx16": 16}
# The GGUF block kinds: kind -> (weights, bytes) per block.
BLOCK_KINDS = {"q5_0": (32, 22), "q5_1": (32, 24), "q5_k": (256, 176), "q6_k": (256, 210),
               "q4_0": (32, 18), "q4_1": (32, 20), "q4_k": (256, 144)}
# Block kinds re-laid 16 rows at a time for integer dots: kind -> its source block kind.
INTERLEAVED_KINDS = {"q4_0x16": "q4_0", "q4_1x16": "q4_1", "q4_kx16": "q4_k", "q5_0x16": "q5_0", "q5_1x16": "q5_1",
                     "q5_kx16": "q5_k", "q6_kx16": "q6_k", "q8_0x16": "int8"}
# (weights, bytes) a row and block where they differ from the source's: Q4_K's 6-bit scales
# and mins widened to bytes; Q8_0's codes and fp16 scales (the int8 kind's) in one buffer.
_INTERLEAVED_FORMS = {"q4_kx16": (256, 148), "q5_kx16": (256, 180), "q8_0x16": (32, 34)}
TILE_ROWS = 16  # rows per tile of the interleaved kinds
_OUT_DTYPES = (torch.float32, torch.bfloat16)
_QPARAM_DTYPES = (torch.float32, torch.float16)
KV_DTYPES = (torch.float32, torch.float16)  # what a paged KV cache the native attention reads may hold


def available() -> bool:
    """True when the extension is built (every CPU can run it)."""
    return _cpu is not None


def isa() -> str:
    """The instruction set the kernels run with: ``avx512``, ``avx2`` or ``scalar``."""
    return _require().isa()


def set_isa(name: str) -> None:
    """Run the kernels with another instruction set (tests compare them)."""
    if not _require().set_isa(name):
        raise ValueError(f"instruction set {name!r} is unknown or not supported by this CPU "
                         f"(best here: run the default); choose avx512, avx2 or scalar")


def quantize_activations(x: torch.Tensor, digits: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 rows x [M, K] -> int8 digit planes [digits, M, K] and scales [M, K/32] as the
    integer dots make them: x ~ scale * q1 (one digit) or scale * (128 * q1 + q2) (two)."""
    if x.dtype != torch.float32 or x.dim() != 2 or x.shape[1] % GROUP_SIZE or not x.is_cpu:
        raise ValueError(f"x must be a CPU float32 tensor [M, K], K a multiple of {GROUP_SIZE}; "
                         f"got {x.dtype} {list(x.shape)}")
    if digits not in (1, 2):
        raise ValueError(f"digits must be 1 or 2, got {digits!r}")
    x = x.contiguous()
    codes = torch.empty(digits, *x.shape, dtype=torch.int8)
    scales = torch.empty(x.shape[0], x.shape[1] // GROUP_SIZE, dtype=torch.float32)
    _require().quantize(x.data_ptr(), x.shape[0], x.shape[1], digits, codes.data_ptr(), scales.data_ptr())
    return codes, scales


@dataclass(frozen=True)
class QuantMatrix:
    """A quantized weight [N, K] in one of the two forms the module docstring gives."""

    kind: str  # "int4" | "int8" | a GGUF block kind (BLOCK_KINDS) | an interleaved one (INTERLEAVED_KINDS)
    codes: torch.Tensor
    qparams: torch.Tensor | None  # None for the block kinds and the interleaved ones

    def __post_init__(self) -> None:
        _require()
        if self.kind not in KIND_CODES:
            raise ValueError(f"kind must be one of {', '.join(KIND_CODES)}, got {self.kind!r}")
        if _block_form(self.kind) is not None:
            self._check_blocks()
            return
        n, k = self.shape
        expected = ((n, k // 2), torch.uint8, (n, k // GROUP_SIZE, 2)) if self.kind == "int4" else \
            ((n, k), torch.int8, (n, k // GROUP_SIZE))
        found = (tuple(self.codes.shape), self.codes.dtype, tuple(self.qparams.shape))
        if k % GROUP_SIZE or found != expected or self.qparams.dtype not in _QPARAM_DTYPES:
            raise ValueError(f"{self.kind} matrix: codes {list(self.codes.shape)} {self.codes.dtype}, qparams "
                             f"{list(self.qparams.shape)} {self.qparams.dtype}; expected codes {list(expected[0])} "
                             f"{expected[1]} and qparams {list(expected[2])} float32 or float16, "
                             f"K a multiple of {GROUP_SIZE}")
        for name, tensor in (("codes", self.codes), ("qparams", self.qparams)):
            if tensor.device.type != "cpu" or not tensor.is_contiguous():
                raise ValueError(f"{self.kind} matrix: {name} must be a contiguous CPU tensor")
        # What every call passes, computed once (a decode step makes ~120 calls).
        object.__setattr__(self, "_call_args", (self.codes.data_ptr(), self.qparams.data_ptr(),
                                                self.qparams.dtype == torch.float16))

    def _check_blocks(self) -> None:
        weights, nbytes = _block_form(self.kind)
        codes = self.codes
        if (codes.dtype != torch.uint8 or codes.dim() != 2 or codes.shape[1] % nbytes or codes.shape[1] == 0
                or self.qparams is not None):
            raise ValueError(f"{self.kind} matrix: codes must be uint8 [N, K / {weights} * {nbytes}] (whole blocks) "
                             f"and qparams None; got codes {codes.dtype} {list(codes.shape)} and qparams "
                             f"{None if self.qparams is None else list(self.qparams.shape)}")
        if codes.device.type != "cpu" or not codes.is_contiguous():
            raise ValueError(f"{self.kind} matrix: codes must be a contiguous CPU tensor")
        if self.kind in INTERLEAVED_KINDS and codes.shape[0] % TILE_ROWS:
            raise ValueError(f"{self.kind} matrix: its rows come in tiles of {TILE_ROWS}, got {codes.shape[0]} rows")
        object.__setattr__(self, "_call_args", (codes.data_ptr(), 0, False))

    @property
    def shape(self) -> tuple[int, int]:
        n, width = self.codes.shape
        if _block_form(self.kind) is not None:
            weights, nbytes = _block_form(self.kind)
            return n, width // nbytes * weights
        return n, width * 2 if self.kind == "int4" else width

    def __reduce__(self):  # the cached pointers are this process's: rebuild from the tensors
        return QuantMatrix, (self.kind, self.codes, self.qparams)

    @property
    def out_features(self) -> int:
        return self.codes.shape[0]

    def matmul(self, x: torch.Tensor, out_dtype: torch.dtype | None = None, x_digits: int = 0) -> torch.Tensor:
        """x [..., K] fp32 or bf16 -> x @ W.T [..., N] in ``out_dtype`` (default x's dtype);
        ``x_digits`` 1 or 2: x quantized to that many int8 digits per block and integer
        products, 0: exact fp32 products (see the module doc)."""
        n, k = self.shape
        if x.dtype not in _OUT_DTYPES or x.shape[-1] != k or not x.is_cpu:
            raise ValueError(f"x must be a CPU float32/bfloat16 tensor [..., {k}], got {x.dtype} {list(x.shape)}")
        if not x.is_contiguous():
            x = x.contiguous()
        out_dtype = out_dtype or x.dtype
        out = torch.empty(*x.shape[:-1], n, dtype=out_dtype)
        codes, qparams, qparams_f16 = self._call_args
        _cpu.matmul(KIND_CODES[self.kind], x.data_ptr(), x.dtype == torch.bfloat16, x.numel() // k, k, n,
                    codes, qparams, qparams_f16, out.data_ptr(), out_dtype == torch.bfloat16, torch.get_num_threads(),
                    x_digits)
        return out

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The weight's values [N, K] as fp32 (exactly scale * q + offset) or rounded to bf16."""
        if dtype not in _OUT_DTYPES:
            raise ValueError(f"dequantize gives float32 or bfloat16, not {dtype}")
        n, k = self.shape
        out = torch.empty(n, k, dtype=dtype)
        self.dequantize_rows(0, n, out)
        return out

    def dequantize_rows(self, start: int, stop: int, out: torch.Tensor) -> torch.Tensor:
        """Rows [start, stop) of ``dequantize(out.dtype)`` written into ``out`` [stop - start, K]
        (contiguous fp32 or bf16): a tiled prefill GEMM reuses one small buffer this way
        instead of holding the whole matrix dense."""
        n, k = self.shape
        if not 0 <= start <= stop <= n:
            raise ValueError(f"rows [{start}, {stop}) are outside the matrix's {n} rows")
        if out.dtype not in _OUT_DTYPES or tuple(out.shape) != (stop - start, k) or not out.is_contiguous() \
                or not out.is_cpu:
            raise ValueError(f"out must be a contiguous CPU float32/bfloat16 tensor [{stop - start}, {k}], "
                             f"got {out.dtype} {list(out.shape)}")
        codes, qparams, qparams_f16 = self._call_args
        first_row = start
        if self.kind not in INTERLEAVED_KINDS:  # those are read from their first tile on
            codes += start * self.codes.stride(0) * self.codes.element_size()
            first_row = 0
        if self.qparams is not None:  # the block kinds carry their scales inside the codes
            qparams += start * self.qparams.stride(0) * self.qparams.element_size()
        _cpu.dequantize(KIND_CODES[self.kind], codes, qparams, qparams_f16, stop - start, k,
                        out.data_ptr(), out.dtype == torch.bfloat16, torch.get_num_threads(), first_row)
        return out

    def interleaved(self) -> QuantMatrix:
        """This Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K or Q8_0 (int8, fp16 scales) matrix re-laid
        16 rows at a time (``q4_0x16``, ...) in a new buffer, for integer dots at the memory
        bound: the same values and the same size (Q4_K and Q5_K: 148 and 180 bytes a block
        where GGUF's take 144 and 176, their 6-bit scales widened to bytes). Pages of this matrix
        that map the file are released as they are re-laid (``_interleave16``)."""
        if not self.interleavable:
            sources = ", ".join(INTERLEAVED_KINDS.values())
            raise ValueError(f"only {sources} (with fp16 scales) matrices of a multiple of {TILE_ROWS} rows "
                             f"interleave, got {self.kind} with {self.codes.shape[0]} rows")
        wanted = {source: kind for kind, source in INTERLEAVED_KINDS.items()}[self.kind]
        n, k = self.shape
        weights, nbytes = _block_form(wanted)
        out = torch.empty(n, k // weights * nbytes, dtype=torch.uint8)
        _advise(out, _MADV_HUGEPAGE)  # before the first write: 2 MB pages, ~500x fewer page faults
        _interleave16(self.kind, self.codes, self.qparams, k, out)
        return QuantMatrix(wanted, out, None)

    @staticmethod
    def interleaved_q8_0(blocks: torch.Tensor, shape: tuple[int, int]) -> QuantMatrix:
        """GGUF Q8_0 blocks [N, K/32 * 34] (fp16 d, 32 int8 codes) re-laid as ``q8_0x16``
        straight from the blocks: the values ``interleaved()`` gives an int8 matrix split from
        them, without the split copy (a Q8_0 model held it beside the file and the re-laid
        buffer while loading: 2.1 GB peak for a 1.1 GB 1B file)."""
        n, k = shape
        if blocks.dtype != torch.uint8 or tuple(blocks.shape) != (n, k // GROUP_SIZE * 34) or k % GROUP_SIZE \
                or n % TILE_ROWS or not blocks.is_contiguous():
            raise ValueError(f"Q8_0 blocks of a [{n}, {k}] matrix must be contiguous uint8 [{n}, {k // GROUP_SIZE * 34}] "
                             f"in whole tiles of {TILE_ROWS} rows, got {blocks.dtype} {tuple(blocks.shape)}")
        weights, nbytes = _block_form("q8_0x16")
        out = torch.empty(n, k // weights * nbytes, dtype=torch.uint8)
        _advise(out, _MADV_HUGEPAGE)
        _interleave16("int8", blocks, None, k, out)
        return QuantMatrix("q8_0x16", out, None)

    @property
    def interleavable(self) -> bool:
        """Whether ``interleaved()`` applies: a GGUF 4-, 5- or 6-bit kind, or int8 with fp16 scales
        (Q8_0's), in whole tiles of 16 rows."""
        if self.kind not in INTERLEAVED_KINDS.values() or self.codes.shape[0] % TILE_ROWS:
            return False
        return self.kind != "int8" or self.qparams.dtype == torch.float16

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        """The fp32 values of the rows ``index`` [...] -> [..., K] (an embedding lookup)."""
        if self.kind in BLOCK_KINDS:  # those rows' blocks, decoded by the kernels
            picked = QuantMatrix(self.kind, self.codes[index.reshape(-1)].contiguous(), None)
            return picked.dequantize().reshape(*index.shape, self.shape[1])
        if self.kind in INTERLEAVED_KINDS:  # each row from its tile, by the kernels
            flat = index.reshape(-1).to(torch.int64).contiguous()
            if bool(((flat < 0) | (flat >= self.shape[0])).any()):
                raise IndexError(f"row index out of range for a matrix of {self.shape[0]} rows")
            out = torch.empty(flat.numel(), self.shape[1])
            _cpu.gather16(KIND_CODES[self.kind], self.codes.data_ptr(), self.shape[1], flat.data_ptr(), flat.numel(),
                          out.data_ptr())
            return out.reshape(*index.shape, self.shape[1])
        codes, qparams = self.codes[index], self.qparams[index].to(torch.float32)
        if self.kind == "int8":
            values = codes.to(torch.float32).unflatten(-1, (-1, GROUP_SIZE)) * qparams[..., None]
        else:
            q = _int4_codes(codes)
            values = q.to(torch.float32) * qparams[..., 0:1] + qparams[..., 1:2]
        return values.flatten(-2)

    @staticmethod
    def concat(parts: list[QuantMatrix]) -> QuantMatrix:
        """One matrix whose rows are the parts' rows, in order (q/k/v or gate/up fused)."""
        kinds = {part.kind for part in parts}
        if len(kinds) != 1:
            raise ValueError(f"cannot concatenate matrices of kinds {sorted(kinds)}")
        if _block_form(parts[0].kind) is not None:  # interleaved parts are whole tiles: their tiles follow
            return QuantMatrix(parts[0].kind, join_rows([p.codes for p in parts]), None)
        dtypes = {part.qparams.dtype for part in parts}
        dtype = dtypes.pop() if len(dtypes) == 1 else torch.float32  # f16 values are exact in f32
        return QuantMatrix(kinds.pop(), join_rows([p.codes for p in parts]),
                           join_rows([p.qparams.to(dtype) for p in parts]))


def paged_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, table: torch.Tensor,
                    last: int, part_positions: int = 0) -> torch.Tensor:
    """One row's attention as the native decode step computes it: q [heads, D] against the
    positions 0..``last`` of a paged cache keys/values [num_blocks, block_size, kv_heads, D]
    through ``table`` [max_blocks] (int64 block ids; -1: a dropped block, hidden), each kv
    head shared by heads / kv_heads consecutive query heads. softmax(q . k / sqrt(D)) . v per
    head -> [heads, D], float32. The cache is float32, or float16 (widened as it is read).
    ``part_positions`` (whole blocks): attend in parts of that many positions and combine
    them, as the step does for a long row; 0: in one go."""
    for name, tensor, dtypes in (("q", q, (torch.float32,)), ("keys", keys, KV_DTYPES), ("values", values, KV_DTYPES)):
        if tensor.dtype not in dtypes or not tensor.is_cpu or not tensor.is_contiguous():
            wanted = " or ".join(str(dtype).removeprefix("torch.") for dtype in dtypes)
            raise ValueError(f"{name} must be a contiguous CPU {wanted} tensor, got {tensor.dtype} on {tensor.device}")
    if values.dtype != keys.dtype:
        raise ValueError(f"keys and values must share a dtype, got {keys.dtype} and {values.dtype}")
    if keys.dim() != 4 or values.shape != keys.shape or q.dim() != 2 or q.shape[1] != keys.shape[3]:
        raise ValueError(f"keys and values must be [num_blocks, block_size, kv_heads, D] alike and q [heads, D]; "
                         f"got {list(keys.shape)}, {list(values.shape)}, {list(q.shape)}")
    num_blocks, block_size, kv_heads, head_dim = keys.shape
    heads = q.shape[0]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads do not share {kv_heads} kv heads evenly")
    if table.dtype != torch.int64 or table.dim() != 1 or not table.is_contiguous():
        raise ValueError(f"table must be a contiguous int64 vector of block ids, got {table.dtype} {list(table.shape)}")
    if not 0 <= last < table.numel() * block_size:
        raise ValueError(f"last position {last} is outside the table's {table.numel() * block_size} positions")
    visible = table[:last // block_size + 1]
    if bool(((visible < -1) | (visible >= num_blocks)).any()) or int(visible[-1]) < 0:
        raise ValueError(f"table holds a block outside -1..{num_blocks - 1}, or position {last} is in a dropped block")
    if part_positions < 0 or part_positions % block_size:
        raise ValueError(f"part_positions must be 0 or a positive multiple of the block size {block_size}, "
                         f"got {part_positions}")
    group = heads // kv_heads
    out = torch.empty(heads, head_dim)
    scores = torch.empty(group, last + 1)
    for kv_head in range(kv_heads):
        _require().attend_group(q[kv_head * group:].data_ptr(), keys.data_ptr(), values.data_ptr(), table.data_ptr(),
                                block_size, kv_heads, kv_head, group, head_dim, last, part_positions,
                                scores.data_ptr(), out[kv_head * group:].data_ptr(), int(keys.dtype == torch.float16))
    return out


def to_halves(x: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU float32 tensor rounded to float16 the way the native step writes a KV
    cache of halves (nearest even, on the current instruction set); torch's ``.half()`` rounds
    the same way."""
    if x.dtype != torch.float32 or not x.is_cpu or not x.is_contiguous():
        raise ValueError(f"x must be a contiguous CPU float32 tensor, got {x.dtype} on {x.device}")
    out = torch.empty(x.shape, dtype=torch.float16)
    _require().to_halves(x.data_ptr(), out.data_ptr(), x.numel())
    return out


# rows re-laid at a time by _interleave16 (whole tiles): Gemma 3's 262k x 640 head in 2.5 MiB parts
INTERLEAVE_ROWS = 4096


def _interleave16(kind: str, codes: torch.Tensor, scales: torch.Tensor | None, k: int, out: torch.Tensor) -> None:
    """``interleave16`` of rows ``codes`` [N, ...] (and their fp16 ``scales`` [N, K/32], or None)
    into ``out`` [N, ...], ``INTERLEAVE_ROWS`` rows at a time, releasing each part's source pages
    where they map the file (``release_pages``) once it is re-laid: the file's copy is never
    resident beside the whole of the new one (Gemma 3 270M's tied head, 170 MiB, was twice)."""
    n = codes.shape[0]
    for start in range(0, n, INTERLEAVE_ROWS):
        stop = min(n, start + INTERLEAVE_ROWS)
        _require().interleave16(KIND_CODES[kind], codes[start].data_ptr(),
                                0 if scales is None else scales[start].data_ptr(), stop - start, k,
                                out[start].data_ptr())
        for source in (codes, scales):
            if source is not None:
                release_pages(source[start:stop])
    for source in (codes, scales):  # the pages the parts shared at their edges
        if source is not None:
            release_pages(source)


def release_pages(tensor: torch.Tensor) -> bool:
    """Drop the process's mapping of the whole pages under ``tensor`` when its storage maps a
    file (or shared memory): they leave the process's resident memory, their contents stay in
    the page cache and come back on the next touch (MADV_DONTNEED; the engine never writes to
    a file's tensors, so no private copy of a page is lost). Used once a matrix was re-laid
    into a buffer of its own, so that the file's copy, read once to make it, is not counted
    twice. The process's own memory is left as it is: dropping it would lose it. True where
    the kernel took the advice; no effect off Linux.

    MADV_PAGEOUT, used before, also evicts the pages from the page cache: the same resident
    memory after, at 4x the CPU time and, on a busy machine, 5x the wall time (SmolLM2's
    212 matrices: 220 against 45 ms), which a hot swap waited for."""
    if not tensor.untyped_storage().is_shared():  # not a mapping: torch's own allocation
        return False
    return _advise(tensor, _MADV_DONTNEED)


def _advise(tensor: torch.Tensor, advice: int, page: int = mmap.PAGESIZE) -> bool:
    """madvise(advice) over the whole pages under ``tensor``; True where the kernel took it."""
    if _libc is None or tensor.numel() == 0:
        return False
    if advice == _MADV_HUGEPAGE:
        page = 2 << 20
    start = -(-tensor.data_ptr() // page) * page
    stop = (tensor.data_ptr() + tensor.nbytes) // page * page
    return stop > start and _libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(stop - start), advice) == 0


@contextlib.contextmanager
def heap_for_loading():
    """While a model loads, every C allocation of 1 MiB or more gets its own mapping, which
    goes back to the system when freed; then the heap's free pages are handed back too
    (glibc's mallopt and malloc_trim; nothing elsewhere). A load makes and frees large
    temporaries (a fused matrix's parts, a split Q8_0 matrix); glibc's mmap threshold grows
    with the first ones freed, and the next ones came from the heap and stayed: a Q8_0 1B
    load peaked at 2.07 GB for 1.41 GB held after it. Afterwards the threshold is fixed at
    32 MiB, the most glibc's own growing threshold reaches on a 64-bit system, so a step's
    temporaries come from the heap as they would have after any load."""
    mallopt = getattr(_libc, "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 1 << 20)
    try:
        yield
    finally:
        if mallopt is not None:
            mallopt(_M_MMAP_THRESHOLD, 32 << 20)
            _libc.malloc_trim(0)


def join_rows(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``torch.cat(tensors)`` (along the first dimension), without copying when the tensors
    already lie back to back in one storage: then the result is a view of it. A ``.mcp``
    file stores a layer's q/k/v and gate/up matrices that way (``modelfile.writer``), and
    the loader's views of it keep their order, so fusing them at load copies nothing (the
    copies were half of a warm load and 44 MB of the process's memory for SmolLM2-135M)."""
    first = tensors[0]
    storage, cursor = first.untyped_storage(), first.data_ptr()
    for tensor in tensors:
        if (tensor.dtype != first.dtype or tensor.shape[1:] != first.shape[1:] or not tensor.is_contiguous()
                or tensor.untyped_storage().data_ptr() != storage.data_ptr() or tensor.data_ptr() != cursor):
            return torch.cat(tensors)
        cursor += tensor.nbytes
    rows = sum(tensor.shape[0] for tensor in tensors)
    return torch.empty(0, dtype=first.dtype).set_(storage, first.storage_offset(), (rows, *first.shape[1:]))


def _block_form(kind: str) -> tuple[int, int] | None:
    """(weights, bytes) per block of a GGUF block kind or an interleaved one, else None."""
    return _INTERLEAVED_FORMS.get(kind) or BLOCK_KINDS.get(INTERLEAVED_KINDS.get(kind, kind))


def _int4_codes(codes: torch.Tensor) -> torch.Tensor:
    """Packed bytes [..., K/2] -> codes [..., K/32, 32] in element order."""
    groups = codes.unflatten(-1, (-1, GROUP_SIZE // 2))  # [..., K/32, 16]
    return torch.cat((groups & 0x0F, groups >> 4), dim=-1)


def _require():
    if _cpu is None:
        raise RuntimeError(f"the native CPU kernels are not built: {BUILD_ERROR}")
    return _cpu
