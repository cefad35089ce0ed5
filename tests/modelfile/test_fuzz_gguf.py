"""Mutation fuzzer over GGUF headers, and the corrupt GGUFs of issue 28 finding 12, through
``compile_model`` and ``mcp2026 compile``.

The base is a tiny valid llama GGUF written with ``gguf.GGUFWriter`` (one layer, a 64-token
byte-level vocabulary, f32, f16 and Q8_0 tensors). An example changes metadata values (a
count to 0 or 2**40, a number to a string, a key dropped), tensor shapes, and raw bytes of the
header, then compiles it. The only errors allowed out are ``ModelFormatError`` (with
``UnsupportedModelError``); a compile that succeeds must give a file that opens and builds.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from mcp.base.errors import ModelFormatError
from mcp.compiler.compiler import compile_model
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.modelfile.reader import open_model

# CI runs the bounded default; MCP_FUZZ_SCALE=N runs N times the examples (an attack rerun, docs/security.md)
SCALE = int(os.environ.get("MCP_FUZZ_SCALE", "1"))

_FOLDER = Path(tempfile.mkdtemp(prefix="mcp-fuzz-gguf-"))
# ggml's byte-level alphabet: the 64 tokens are plain ASCII letters and digits
_TOKENS = [chr(c) for c in range(ord("0"), ord("0") + 64)]
METADATA = {
    "general.architecture": "llama",
    "llama.embedding_length": 64,
    "llama.attention.head_count": 2,
    "llama.attention.head_count_kv": 1,
    "llama.feed_forward_length": 128,
    "llama.block_count": 1,
    "llama.context_length": 128,
    "llama.attention.layer_norm_rms_epsilon": 1e-5,
    "llama.rope.freq_base": 10000.0,
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "default",
    "tokenizer.ggml.tokens": _TOKENS,
    "tokenizer.ggml.bos_token_id": 1,
    "tokenizer.ggml.eos_token_id": 2,
}
TENSORS = {  # GGUF name -> (numpy shape [rows, cols], type)
    "token_embd.weight": ((64, 64), "q8_0"),
    "blk.0.attn_norm.weight": ((64,), "f32"),
    "blk.0.attn_q.weight": ((64, 64), "f16"),
    "blk.0.attn_k.weight": ((32, 64), "f32"),
    "blk.0.attn_v.weight": ((32, 64), "f32"),
    "blk.0.attn_output.weight": ((64, 64), "f32"),
    "blk.0.ffn_norm.weight": ((64,), "f32"),
    "blk.0.ffn_gate.weight": ((128, 64), "f32"),
    "blk.0.ffn_up.weight": ((128, 64), "f32"),
    "blk.0.ffn_down.weight": ((64, 128), "f32"),
    "output_norm.weight": ((64,), "f32"),
}


def write_gguf(path: Path, metadata: dict, tensors: dict) -> Path:
    """A GGUF of ``metadata`` (python values: the writer picks each one's GGUF type) and tensors."""
    writer = gguf.GGUFWriter(str(path), arch=None)
    for key, value in metadata.items():
        writer.add_key_value(key, value, _value_type(value),
                             sub_type=_value_type(value[0]) if isinstance(value, list) and value else
                             gguf.GGUFValueType.STRING if isinstance(value, list) else None)
    rng = np.random.default_rng(0)
    for name, (shape, kind) in tensors.items():
        values = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        if kind == "q8_0":
            writer.add_tensor(name, gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, values.astype(np.float16 if kind == "f16" else np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _value_type(value) -> gguf.GGUFValueType:
    if isinstance(value, bool):
        return gguf.GGUFValueType.BOOL
    if isinstance(value, int):
        return gguf.GGUFValueType.INT64 if value < 0 else gguf.GGUFValueType.UINT64
    if isinstance(value, float):
        return gguf.GGUFValueType.FLOAT32
    if isinstance(value, list):
        return gguf.GGUFValueType.ARRAY
    return gguf.GGUFValueType.STRING


_BASE = write_gguf(_FOLDER / "base.gguf", METADATA, TENSORS).read_bytes()
_HEADER_BYTES = len(_BASE) - sum(int(np.prod(s)) * 4 for s, _ in TENSORS.values()) // 2

VALUES = st.sampled_from([0, 1, 2, 3, 31, 63, 64, 65, 1 << 32, 1 << 40, (1 << 63) - 1, -1, 0.0, -1.0, 1e38,
                          float("inf"), float("nan"), "", "llama", "qwen2", "mamba", "gpt2", "llama3", "x",
                          True, [1, 2], ["a", "b"]])
SHAPES = st.sampled_from([(64,), (63,), (64, 64), (32, 64), (64, 32), (128, 64), (64, 128), (1, 64), (64, 1)])


def _mutation():
    value = st.tuples(st.just("value"), st.sampled_from(sorted(METADATA)), VALUES)
    drop = st.tuples(st.just("drop"), st.sampled_from(sorted(METADATA)), st.none())
    shape = st.tuples(st.just("shape"), st.sampled_from(sorted(TENSORS)), SHAPES)
    lose = st.tuples(st.just("lose"), st.sampled_from(sorted(TENSORS)), st.none())
    raw = st.tuples(st.just("byte"), st.integers(0, _HEADER_BYTES), st.integers(0, 255))
    return st.one_of(value, value, drop, shape, lose, raw)


def _write(mutations, path: Path) -> Path:
    metadata, tensors = dict(METADATA), dict(TENSORS)
    for kind, key, what in mutations:
        if kind == "value":
            metadata[key] = what
        elif kind == "drop":
            metadata.pop(key, None)
        elif kind == "shape" and key in tensors:
            tensors[key] = (what, "f32" if tensors[key][1] == "q8_0" and what[-1] % 32 else tensors[key][1])
        elif kind == "lose":
            tensors.pop(key, None)
    try:
        write_gguf(path, metadata, tensors)
    except (ValueError, TypeError, OverflowError, struct.error):
        reject()  # the writer itself refuses it: no file to fuzz
    raw = bytearray(path.read_bytes())
    for kind, where, what in mutations:
        if kind == "byte" and where < len(raw):
            raw[where] = what
    path.write_bytes(bytes(raw))
    return path


def check_compile(src: Path, out: Path) -> None:
    """compile_model gives a ModelFormatError naming the source, or a file that opens and builds."""
    out.unlink(missing_ok=True)
    try:
        compile_model(src, out, precision="source", name="fuzz")
    except ModelFormatError as exc:
        assert str(src) in str(exc) or "GGUF" in str(exc) or "tokenizer" in str(exc), str(exc)
        return
    with open_model(out) as model_file:
        NativeEngine(model_file, EngineOptions(device="cpu"))


@pytest.mark.slow
@settings(max_examples=400 * SCALE, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_mutation(), min_size=1, max_size=3))
def test_mutated_gguf_headers_compile_or_raise_model_format_errors(mutations):
    check_compile(_write(mutations, _FOLDER / "mutated.gguf"), _FOLDER / "mutated.mcp")


def test_the_unmutated_tiny_gguf_compiles(tmp_path):
    out = tmp_path / "tiny.mcp"
    compile_model(_FOLDER / "base.gguf", out, precision="source")
    with open_model(out) as model_file:
        assert model_file.header.architecture.num_attention_heads == 2


@pytest.mark.parametrize("key, value, expected", [
    ("llama.attention.head_count", 0, "llama.attention.head_count must be an integer from 1"),
    ("llama.block_count", 1 << 40, "llama.block_count must be an integer from 1"),
    ("llama.embedding_length", 1 << 32, "llama.embedding_length must be an integer from 1"),
    ("llama.block_count", 1000, "architecture.num_layers is 1000 but the model holds only 11 tensors"),
    ("llama.attention.head_count_kv", 3, "not a multiple of num_kv_heads (3)"),
    ("llama.attention.layer_norm_rms_epsilon", "tiny", "must be a finite number above 0, not 'tiny'"),
    ("llama.rope.freq_base", float("nan"), "llama.rope.freq_base must be a finite number above 0"),
    ("tokenizer.ggml.tokens", 5, "tokenizer.ggml.tokens must be an array of strings"),
])
def test_corrupt_ggufs_are_model_format_errors(tmp_path, key, value, expected):
    src = write_gguf(tmp_path / "bad.gguf", {**METADATA, key: value}, TENSORS)
    with pytest.raises(ModelFormatError) as caught:
        compile_model(src, tmp_path / "bad.mcp", precision="source")
    assert str(src) in str(caught.value) and expected in str(caught.value)


@pytest.mark.slow
def test_cli_compile_of_a_gguf_with_zero_heads_is_one_line_and_exit_2(tmp_path):
    src = write_gguf(tmp_path / "zero-heads.gguf", {**METADATA, "llama.attention.head_count": 0}, TENSORS)
    done = subprocess.run([sys.executable, "-m", "mcp.commands.cli", "compile", str(src), "-o",
                           str(tmp_path / "out.mcp")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"mcp2026: error: {src}: GGUF metadata llama.attention.head_count must be an integer from 1 to "
        f"{1 << 31}, not 0"]
