"""Random-weight GGUFs of real model shapes, quantized by llama.cpp's own quantizer.

Speed and memory depend on a model's shape and its file's tensor types, not on what its
weights say, so ``benchmarks/synthetic.py`` measures 1B-8B models without downloading them:
a Llama of the real shape with random weights is written as F16 with the ``gguf`` package,
carrying SmolLM2's tokenizer (its 49,152-token vocabulary, merges and chat template, copied
from the default model's GGUF) so that both engines tokenize real text, then quantized with
``llama_cpp.llama_model_quantize`` (its default parameters, as ``llama-quantize`` would).
The files are cached in a work folder; the F16 source is deleted once its quantized files
exist (a 3B F16 file is ~6 GB) unless asked to keep it.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

WEIGHT_STD = 0.02  # as a trained Llama's init: RMS-normed activations stay near 1, logits finite
SEED = 0


@dataclass(frozen=True)
class Shape:
    """A Llama's shape; ``targets`` names the issue-30 target set its files are judged by."""

    name: str
    title: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    targets: str
    rope_base: float = 500000.0
    context: int = 4096

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def matrices(self, vocab: int) -> list[tuple[str, tuple[int, ...]]]:
        """(name, numpy shape) of every tensor, in llama.cpp's names; tied embeddings (no output.weight)."""
        kv = self.kv_heads * self.head_dim
        tensors = [("token_embd.weight", (vocab, self.hidden))]
        for layer in range(self.layers):
            block = f"blk.{layer}."
            tensors += [(block + "attn_norm.weight", (self.hidden,)), (block + "attn_q.weight", (self.hidden, self.hidden)),
                        (block + "attn_k.weight", (kv, self.hidden)), (block + "attn_v.weight", (kv, self.hidden)),
                        (block + "attn_output.weight", (self.hidden, self.hidden)),
                        (block + "ffn_norm.weight", (self.hidden,)), (block + "ffn_gate.weight", (self.ffn, self.hidden)),
                        (block + "ffn_up.weight", (self.ffn, self.hidden)), (block + "ffn_down.weight", (self.hidden, self.ffn))]
        return tensors + [("output_norm.weight", (self.hidden,))]


SHAPES = {
    # A small shape for the benchmark's own test: every dimension a multiple of 256 (K-quant blocks).
    "tiny": Shape("tiny", "tiny Llama (test shape)", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, targets="1b"),
    "1b": Shape("1b", "Llama-3.2-1B shape", hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, targets="1b"),
    "3b": Shape("3b", "Llama-3.2-3B shape", hidden=3072, layers=28, heads=24, kv_heads=8, ffn=8192, targets="3b"),
}

# Our names for llama.cpp's file types (llama-quantize's): the constant in llama_cpp.
QUANTS = {"q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0", "q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M", "q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0"}


def quantized_file(shape: Shape, quant: str, vocab_source: Path, workdir: Path, threads: int,
                   keep_f16: bool = False) -> tuple[Path, str]:
    """The cached ``workdir/<shape>-<quant>.gguf``, made first if missing; (path, how it was made)."""
    target = workdir / f"{shape.name}-{quant}.gguf"
    if target.exists():
        return target, "cached"
    source = f16_file(shape, workdir)
    how = "quantized from the cached F16 source"
    if not source.exists():
        write_f16(shape, vocab_source, source)
        how = "written as F16 and quantized"
    quantize(source, target, quant, threads)
    if not keep_f16 and all((workdir / f"{shape.name}-{q}.gguf").exists() for q in QUANTS):
        source.unlink()  # every quant of this shape exists: the F16 source is not needed again
    return target, how + " by llama.cpp in this run"


def f16_file(shape: Shape, workdir: Path) -> Path:
    return workdir / f"{shape.name}-f16.gguf"


def write_f16(shape: Shape, vocab_source: Path, path: Path, seed: int = SEED) -> None:
    """A random-weight F16 GGUF of ``shape`` with ``vocab_source``'s tokenizer, written tensor by
    tensor (one tensor in memory at a time) to a temporary name, then renamed."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(vocab_source)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    writer = gguf.GGUFWriter(path.with_suffix(".part"), "llama")
    _add_hyperparameters(writer, shape, vocab, gguf)
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            _copy_field(writer, key, field, gguf)
    tensors = shape.matrices(vocab)
    for name, dims in tensors:
        dtype = np.float32 if len(dims) == 1 else np.float16  # norms stay F32, as converters write them
        writer.add_tensor_info(name, dims, np.dtype(dtype), int(np.prod(dims)) * np.dtype(dtype).itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for _, dims in tensors:
        writer.write_tensor_data(_random_tensor(rng, dims, np))
    writer.close()
    os.replace(path.with_suffix(".part"), path)


def _add_hyperparameters(writer, shape: Shape, vocab: int, gguf) -> None:
    writer.add_name(f"random {shape.title}")
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_base)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)


def _copy_field(writer, key: str, field, gguf) -> None:
    """One metadata field as the source has it (arrays keep their element type)."""
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        writer.add_key_value(key, field.contents(), kind, sub_type=field.types[-1])
    else:
        writer.add_key_value(key, field.contents(), kind)


def _random_tensor(rng, dims: tuple[int, ...], np):
    if len(dims) == 1:
        return np.ones(dims, dtype=np.float32)  # RMSNorm weights: the identity scale
    values = rng.random(dims, dtype=np.float32)  # uniform: twice as fast as normal draws, and speed is all it is for
    values -= 0.5
    values *= WEIGHT_STD * 12**0.5  # uniform on [-a, a] has std a / sqrt(3)
    return values.astype(np.float16)


def quantize(source: Path, target: Path, quant: str, threads: int) -> None:
    """llama.cpp's quantizer with its default parameters and ``quant``'s file type."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, QUANTS[quant])
    params.nthread = threads
    partial = target.with_suffix(".part")
    code = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    if code != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"llama_model_quantize({source.name} -> {quant}) returned {code}")
    os.replace(partial, target)


def tensor_bytes(path: Path) -> int:
    """Bytes of tensor data in a GGUF: what a batch-1 decode step reads (the tied embedding is
    the output head, read whole every step; its one-row lookup is negligible)."""
    import gguf

    return sum(int(tensor.n_bytes) for tensor in gguf.GGUFReader(path).tensors)
