"""The native engine: a loaded ``.mcp`` model on a device, ready to generate.

It assembles the parts (device, precision plan, weights, model, tokenizer) and knows nothing
of the SDK or of serving above it. It builds no decode loop: requests run on the engine loop
(engine/loop.py); scoring builds a contiguous-cache decoder explicitly (engine/contiguous.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from mcp.base.errors import ConfigError, ModelFormatError
from mcp.engine import kernels
from mcp.engine.layers.linear import PackedLinear, interleave_for_integer_dots
from mcp.engine.models import is_encoder, model_class
from mcp.engine.options import EngineOptions
from mcp.engine.precision import TORCH_DTYPES, Hardware, ResolvedPlan, resolve
from mcp.engine.tokenizer import Tokenizer
from mcp.engine.weights import ModelWeights
from mcp.modelfile.reader import ModelFile


def resolve_device(spec: str) -> torch.device:
    """``auto`` is CUDA when present, else CPU; an unavailable device is a ConfigError."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise ConfigError(f"device must be auto, cpu, cuda or cuda:N, got {spec!r}") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {spec!r} was asked for but CUDA is not available; use cpu or auto")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(f"device {spec!r} does not exist: {torch.cuda.device_count()} CUDA device(s)")
    elif device.type != "cpu":
        raise ConfigError(f"device must be auto, cpu, cuda or cuda:N, got {spec!r}")
    return device


@dataclass(frozen=True)
class WeightMemory:
    """What the loaded weights occupy, so that a dense cache is never a hidden cost."""

    weight_bytes: int  # every distinct parameter and buffer of the model (file-mapped ones included)
    prefill_cache_bytes: int  # of which dense copies kept for prefill (cache_prefill_weights; else 0)


class NativeEngine:
    """A model loaded for inference by the PyTorch engine."""

    backend_name = "native"

    def __init__(self, model_file: ModelFile, options: EngineOptions = EngineOptions()) -> None:
        try:
            with kernels.heap_for_loading():
                self._build(model_file, options)
        except ModelFormatError as exc:  # e.g. the tokenizer's or chat template's: name the file
            if str(model_file.path) in str(exc):
                raise
            raise type(exc)(f"{model_file.path}: {exc}") from None

    def _build(self, model_file: ModelFile, options: EngineOptions) -> None:
        header = model_file.header
        self.header = header
        self.device = resolve_device(options.device)
        self.hardware = Hardware.detect(self.device, options.native_kernels)
        arch = header.architecture
        self.is_encoder = is_encoder(arch.architecture)
        # an encoder's context is the longest input it embeds (sentence-transformers' max_seq_length)
        model_context = arch.pooling.max_tokens if self.is_encoder and arch.pooling else arch.max_position_embeddings
        self.max_context = _max_context(model_context, options.max_context)
        native_step = arch.architecture in NATIVE_STEP_FAMILIES
        self.plan: ResolvedPlan = resolve(header.tensors, header.precision_plan, self.hardware,
                                          options.precision, options.precision_overrides,
                                          options.cache_prefill_weights, options.decode_dots,
                                          options.native_step and native_step)
        self.tokenizer = Tokenizer.from_spec(header.tokenizer)
        weights = ModelWeights(model_file, self.plan, self.device, options.cache_prefill_weights)
        dtype = TORCH_DTYPES[self.plan.compute_precision]
        model = model_class(header.architecture.architecture)(
            header.architecture, weights, self.max_context, dtype
        )
        # The loader's caches hold every matrix as loaded (a Q8_0 matrix as a copy split into codes
        # and scales): dropped first, so that each re-laid matrix's source is freed as it goes
        # and the peak is one copy of the weights, not two.
        del weights
        interleave_for_integer_dots(model)
        self.model = model.eval()

    @property
    def precision(self) -> str:
        return self.plan.summary()

    def weight_memory(self) -> WeightMemory:
        """The model's weight bytes, each tensor once (a tied head and embedding share one)."""
        tensors = {(t.data_ptr(), t.nbytes): t.nbytes for t in itertools.chain(self.model.parameters(),
                                                                              self.model.buffers())}
        cache = sum(m.prefill_cache.nbytes for m in self.model.modules()
                    if isinstance(m, PackedLinear) and m.prefill_cache is not None)
        return WeightMemory(sum(tensors.values()), cache)


# the families models/llama_step.py runs (BERT steps on torch)
NATIVE_STEP_FAMILIES = ("llama", "gemma3", "qwen3", "qwen3_moe", "phi3")


def _max_context(model_context: int, cap: int | None) -> int:
    if cap is None:
        return model_context
    if cap <= 0:
        raise ConfigError(f"max_context must be a positive integer, got {cap}")
    return min(model_context, cap)
