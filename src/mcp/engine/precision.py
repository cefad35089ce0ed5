"""The precision plan: which kernel each tensor runs, per phase, on this hardware.

The brief's hardware-aware precision routing as a pure function. For every weight matrix
the plan picks a *decode* kernel (few rows per call: memory-bound, so the fewest bytes
win: packed int4 where the source is 4-bit, grouped int8 where it is Q8_0) and a *prefill*
kernel (many rows: compute-bound, so a dense GEMM on dequantized weights, bf16 where the
CPU multiplies bf16 natively). On a CPU the decode kernels are the native ones
(``mcp.engine.kernels``: ``mcp-int4``, ``mcp-int8``, and ``mcp-q4_0``, ``mcp-q4_1``,
``mcp-q4_k``, ``mcp-q5_0``, ``mcp-q5_1``, ``mcp-q5_k``, ``mcp-q6_k`` on GGUF's own 4/5/6-bit
blocks read as stored, as many bytes a token as llama.cpp reads; exact weights and fp32 sums;
4-bit blocks run as ``mcp-int4`` only where int8 dots are asked for, which the block kernels
lack) when they are built, else PyTorch's ``int4pack`` (bf16 activations); CUDA runs dense bf16.
Sensitive tensors (the embedding and output head) are never requantized: they keep their
exact Q8_0/Q5/Q6 values (natively) or at least bf16. The file's ``PrecisionPlan`` and the
config can force a precision globally or per tensor pattern; "auto" leaves the choice to
these rules.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from mcp.base.errors import ConfigError
from mcp.engine import kernels
from mcp.engine.options import DECODE_DOTS, PRECISION_CHOICES
from mcp.engine.quant import int8
from mcp.engine.quant.int4pack import INT4_SOURCES, can_pack
from mcp.modelfile.moe import is_router
from mcp.modelfile.spec import DENSE_ENCODINGS, QPARAMS_SUFFIX, SCALE_ZERO_SUFFIX, PrecisionPlan, TensorSpec

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
SENSITIVE = ("model.embed_tokens.weight", "lm_head.weight")
# A packed matrix runs its decode kernel for calls of up to this many rows and its prefill
# kernel (a dense GEMM) above. The dense GEMM needs the weight dequantized, per call unless
# cached: on AVX2 that costs ~1.5 ms for a 1536x576 matrix, what the int4 kernel loses to an
# fp32 GEMM over ~120 rows (27 against 15 us a row), so there it pays from 128 rows; with the
# dense weight cached, or AMX's bf16 GEMM, it pays from 16 (measured, 2 threads).
DECODE_MAX_ROWS = 16
DECODE_MAX_ROWS_DEQUANTIZING = 128
# The native kernels multiply several activation rows with each tile of weight rows
# dequantized once into L1, so a whole SmolLM2 layer stack costs ~27 ms at 17 rows and ~42
# ms at 32, where dequantizing every matrix for a dense GEMM (even AMX's bf16) and converting
# the activations costs ~40 ms at any row count: on an AMX CPU the native kernels run up to
# 40 rows (measured, 2 threads, Xeon with AMX; AVX2 kernels: 34 ms at 17 rows). With the
# weight prefetch built and the step in one call, the time to first token of a prompt through
# the native step against AMX's GEMM (the two limits' models in one process, alternating,
# 2026-12-05, Xeon with AMX): 37 tokens 0.91x (15 of 15 rounds), 41 tokens 0.98x (a tie),
# 56 tokens 1.14x and 80 tokens 1.46x (AMX faster in every round); the limit sits at the tie.
DECODE_MAX_ROWS_NATIVE_AMX = 40
# Without AMX the dense prefill GEMM is fp32, or bf16 at AVX512-BF16's rate, over weights
# dequantized per call (~120 ms for SmolLM2's layers on 2 AVX2 cores before a single
# product), so the native kernels stay ahead far longer. AVX2 (AMD EPYC, 2026-12-04): a
# whole raw prefill took 90 against 171 ms at 24 tokens, 366 against 434 at 128, and the
# two met between 160 and 256. AVX512-BF16 without AMX (AMD EPYC Zen 4, 2026-12-05, the two
# limits alternated in one process): the 37-token chat prompt 66 against 96 ms, 49 tokens
# 73 against 97, 110 tokens 157-169 against 165-191, and at 196 tokens the bf16 GEMM won (265
# against 324). They run up to 128 rows on both. On Zen 5, whose bf16 runs at int8's rate, one
# 2048 x 8192 product (benchmarks/x16_kernels.py --activations) ties between 64 and 128 rows
# (x16 int8x2 ~140 G multiply-adds/s, the dequantized bf16 GEMM 120 at 64 rows and ~160 at
# 128): the limit stays, for the exact weights and int8x2's quality up to it.
DECODE_MAX_ROWS_NATIVE_NO_AMX = 128
# The native kernel of each GGUF block kind read as stored (mcp.engine.kernels.BLOCK_KINDS).
BLOCK_KERNELS = {kind: f"mcp-{kind}" for kind in kernels.BLOCK_KINDS}
NATIVE_KERNELS = ("mcp-int4", "mcp-int8", *BLOCK_KERNELS.values())
# How the native decode kernels multiply (DECODE_DOTS, engine/options.py): "exact" multiplies
# the exact weights with fp32 activations; "int8" quantizes each activation row to int8 blocks of 32 and multiplies in
# integer SIMD (llama.cpp's way: top-1 agreement with fp32 drops from 100% to ~92%), the
# sensitive output head excepted; "int8x2" writes each block as two int8 digits (15 bits)
# and multiplies both, the head included: 99.9% top-1 and mean KL < 1e-5 on the quality
# set, and with the GGUF 4/5/6-bit and Q8_0 matrices re-laid 16 rows at a time (kernels.INTERLEAVED_KINDS)
# 2.3-2.6x the exact step's batch-1 decode at 1B on one Zen 4 core. "auto" picks int8x2
# where the native kernels have SIMD (AVX2, AVX-512), exact on the plain C++ build
# (docs/config.md).
#
# The activation digits of each: what the kernels take (mcp.engine.kernels, x_digits).
DOT_DIGITS = {"exact": 0, "int8": 1, "int8x2": 2}


@dataclass(frozen=True)
class Hardware:
    """What the plan needs to know about the device."""

    device_type: str  # "cpu" | "cuda"
    cpu_capability: str  # torch's dispatch level: "AVX512", "AVX2", "DEFAULT", ...
    native_bf16: bool  # bf16 dot products in hardware (AVX512-BF16, AMX, or a CUDA GPU)
    amx: bool
    cuda_capability: tuple[int, int] | None = None
    native_kernels: str | None = None  # the native CPU kernels' instruction set, when built

    @classmethod
    def detect(cls, device: torch.device, native_kernels: bool = True) -> Hardware:
        """This device; ``native_kernels=False`` plans PyTorch's kernels even where ours are built."""
        flags = _cpu_flags()
        if device.type == "cuda":
            capability = torch.cuda.get_device_capability(device)
            return cls("cuda", torch.backends.cpu.get_cpu_capability(), capability >= (8, 0), False, capability)
        amx = "amx_bf16" in flags
        native = kernels.isa() if native_kernels and kernels.available() else None
        return cls("cpu", torch.backends.cpu.get_cpu_capability(), amx or "avx512_bf16" in flags, amx,
                   native_kernels=native)

    def describe(self) -> str:
        if self.device_type == "cuda":
            return f"cuda sm_{self.cuda_capability[0]}{self.cuda_capability[1]}"
        extras = [name for name, on in (("bf16", self.native_bf16), ("amx", self.amx)) if on]
        text = f"cpu {self.cpu_capability.lower()}" + (f" +{'+'.join(extras)}" if extras else "")
        if self.native_kernels:
            native = f"native kernels {self.native_kernels}"
        else:
            native = f"native kernels not built ({kernels.BUILD_ERROR})" if kernels.BUILD_ERROR else "PyTorch kernels"
        return f"{text}, {native}"


@lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


@dataclass(frozen=True)
class TensorPlan:
    """Kernels for one tensor: ``dense-fp32``, ``dense-bf16``, ``dense-f16``, ``mcp-int4``,
    ``mcp-int8`` (native), ``int4pack`` or ``int8pack`` (PyTorch's)."""

    decode: str
    prefill: str


@dataclass(frozen=True)
class ResolvedPlan:
    """The plan for every tensor of a loaded model, and the activation precision."""

    by_tensor: dict[str, TensorPlan]
    activations: str
    hardware: str
    decode_max_rows: int = DECODE_MAX_ROWS  # calls of more rows run the prefill kernel
    decode_dots: str = "exact"  # native decode kernels: "exact", "int8" or "int8x2" (DECODE_DOTS)
    decode_step: str = "torch"  # "native": a decode step is one C++ call (models/llama_step.py)
    prefill_cache: bool = False  # packed matrices keep dense copies for prefill (cache_prefill_weights)

    @property
    def compute_precision(self) -> str:
        return self.activations

    def summary(self) -> str:
        """One line: decode kernels with counts, activations; e.g. 'int4pack×210 dense-bf16×1 / bf16'."""
        counts = Counter(plan.decode for plan in self.by_tensor.values())
        kernels = " ".join(f"{kernel}×{n}" for kernel, n in counts.most_common())
        extras = ([f" / {self.decode_dots} dots"] if self.decode_dots != "exact" else []) + \
            ([" / native step"] if self.decode_step == "native" else [])
        return f"{kernels} / act {self.activations}{''.join(extras)}"

    def describe(self) -> list[str]:
        lines = [f"hardware     {self.hardware}", f"activations  {self.activations}",
                 f"prefill      calls of more than {self.decode_max_rows} rows",
                 "prefill on   " + ("cached dense copies of the packed weights" if self.prefill_cache else
                                    "tiles of the packed weights dequantized in turn (no dense copy)"),
                 f"decode       {self.decode_dots} dots, {self.decode_step} step"]
        groups = Counter((plan.decode, plan.prefill) for plan in self.by_tensor.values())
        for (decode, prefill), n in groups.most_common():
            lines.append(f"{n:4} tensors  decode {decode:<11} prefill {prefill}")
        return lines


def resolve(
    tensors: tuple[TensorSpec, ...],
    file_plan: PrecisionPlan,
    hardware: Hardware,
    forced: str | None = None,
    overrides: tuple[tuple[str, str], ...] = (),
    cache_prefill_weights: bool = False,
    decode_dots: str = "auto",
    native_step: bool = True,
) -> ResolvedPlan:
    """Pick kernels for every weight matrix (1-D tensors stay fp32 and are not listed)."""
    if decode_dots not in DECODE_DOTS:
        raise ConfigError(f"decode_dots must be one of {', '.join(DECODE_DOTS)}, got {decode_dots!r}")
    if forced not in (None, "auto") and forced not in PRECISION_CHOICES:
        raise ConfigError(f"precision must be one of {', '.join(PRECISION_CHOICES)}, got {forced!r}")
    for pattern, precision in overrides:
        if precision not in PRECISION_CHOICES:
            raise ConfigError(f"precision override {pattern!r}: {precision!r} is not one of {', '.join(PRECISION_CHOICES)}")
    plan = {}
    for spec in tensors:
        if len(spec.shape) != 2 or spec.name.endswith((QPARAMS_SUFFIX, SCALE_ZERO_SUFFIX)):
            continue  # not a weight matrix: a vector, or the scales of a quantized one
        wanted = _requested(spec.name, file_plan, forced, overrides)
        plan[spec.name] = choose_kernels(spec, wanted, hardware, int_dots=decode_dots == "int8")
    activations = _activations(file_plan, forced, hardware)
    # a router kept dense fp32 is read as it is by the native step (models/llama_step.py)
    all_native = bool(plan) and all(p.decode in NATIVE_KERNELS or (is_router(name) and p.decode == "dense-fp32")
                                    for name, p in plan.items())
    dots = _auto_dots(hardware) if decode_dots == "auto" else decode_dots
    step = "native" if native_step and all_native and activations == "fp32" else "torch"
    return ResolvedPlan(plan, activations, hardware.describe(), _decode_max_rows(plan, hardware, cache_prefill_weights),
                        dots if any(p.decode in NATIVE_KERNELS for p in plan.values()) else "exact", step,
                        cache_prefill_weights)


def _auto_dots(hardware: Hardware) -> str:
    """int8x2 where the native kernels run SIMD integer dots, else exact (see DECODE_DOTS)."""
    return "int8x2" if hardware.native_kernels in ("avx2", "avx512") else "exact"


def _decode_max_rows(plan: dict[str, TensorPlan], hardware: Hardware, cache_prefill_weights: bool) -> int:
    if cache_prefill_weights:
        return DECODE_MAX_ROWS
    if any(p.decode in NATIVE_KERNELS for p in plan.values()):
        return DECODE_MAX_ROWS_NATIVE_AMX if hardware.amx else DECODE_MAX_ROWS_NATIVE_NO_AMX
    if hardware.amx:
        return DECODE_MAX_ROWS
    return DECODE_MAX_ROWS_DEQUANTIZING


def _requested(name: str, file_plan: PrecisionPlan, forced: str | None, overrides) -> str:
    for pattern, precision in overrides:
        if fnmatch.fnmatchcase(name, pattern):
            return precision
    if forced not in (None, "auto"):
        return forced
    for pattern, precision in file_plan.overrides:
        if fnmatch.fnmatchcase(name, pattern):
            return precision
    return file_plan.default


def choose_kernels(spec: TensorSpec, wanted: str, hardware: Hardware, int_dots: bool = False) -> TensorPlan:
    """The kernels for one 2-D tensor given what was asked for ("auto" or a precision);
    ``int_dots``: int8 dots were asked for, which 4-bit sources get as ``mcp-int4``."""
    dense = "dense-bf16" if hardware.native_bf16 or hardware.device_type == "cuda" else "dense-fp32"
    cpu = hardware.device_type == "cpu"
    int4_ok = cpu and spec.encoding in ("int4", *INT4_SOURCES) and can_pack(spec.shape)
    int4_kernel = "mcp-int4" if hardware.native_kernels else "int4pack"
    grouped_int8 = cpu and hardware.native_kernels and spec.encoding in ("int8", "q8_0") and spec.shape[1] % 32 == 0
    blocks_ok = cpu and hardware.native_kernels and spec.encoding in BLOCK_KERNELS and \
        spec.shape[1] % kernels.BLOCK_KINDS[spec.encoding][0] == 0
    if wanted in TORCH_DTYPES:
        kernel = f"dense-{wanted}"
        return TensorPlan(kernel, kernel)
    if wanted == "int4" and int4_ok and spec.name not in SENSITIVE:
        return TensorPlan(int4_kernel, dense)
    if wanted == "int8" and hardware.device_type == "cpu" and int8.can_quantize(spec.shape) and spec.name not in SENSITIVE:
        return TensorPlan("int8pack", dense)
    if wanted not in ("auto", "int4", "int8"):
        raise ConfigError(f"tensor {spec.name}: unknown precision {wanted!r}")
    if is_router(spec.name) and spec.encoding in DENSE_ENCODINGS:  # its logits pick experts (modelfile/moe.py)
        return TensorPlan("dense-fp32", "dense-fp32")
    if blocks_ok and not (int_dots and int4_ok and spec.name not in SENSITIVE):  # GGUF's blocks, exactly
        return TensorPlan(BLOCK_KERNELS[spec.encoding], dense)
    if int4_ok and spec.name not in SENSITIVE:
        return TensorPlan(int4_kernel, dense)
    if grouped_int8:  # Q8_0's own values, exactly: the head and embedding included
        return TensorPlan("mcp-int8", dense)
    # A dense matrix is held once, so one dtype serves both phases: bf16, since memory-bound
    # decode reads half the bytes of fp32 even where the CPU has no native bf16 math.
    return TensorPlan("dense-bf16", "dense-bf16")


def _activations(file_plan: PrecisionPlan, forced: str | None, hardware: Hardware) -> str:
    requested = forced if forced not in (None, "auto") else file_plan.default
    if requested in TORCH_DTYPES:
        return requested
    if hardware.native_kernels:  # they take fp32 as it is; sums are fp32 either way
        return "fp32"
    return "bf16" if hardware.native_bf16 else "fp32"
