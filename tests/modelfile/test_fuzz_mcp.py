"""Mutation fuzzer over ``.mcp`` headers and tensor tables (issue 28, finding 7).

Each example takes the valid tiny model (bad_files.py), changes one to three things (a value
anywhere in the ``.mcp`` header or in a safetensors entry: a count, a shape, an encoding, a
layout, a type; a key dropped; a tensor dropped or doubled; bytes of the prefix overwritten;
the file cut short or extended) and does what a server and ``mcp2026 inspect`` do with a file:
open it, describe it, build the engine from it. The only error allowed out is a
``ModelFormatError`` that names the file; a file that opens must build (open_model checks
everything the engine relies on). Bounded: a fixed number of examples (about 20 s on 2 cores).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from bad_files import McpParts, write_tiny_model  # noqa: E402

from mcp.base.errors import ModelFormatError  # noqa: E402
from mcp.engine.engine import EngineOptions, NativeEngine  # noqa: E402
from mcp.modelfile.inspect import describe  # noqa: E402
from mcp.modelfile.reader import open_model  # noqa: E402

# CI runs the bounded default; MCP_FUZZ_SCALE=N runs N times the examples (an attack rerun, docs/security.md)
SCALE = int(os.environ.get("MCP_FUZZ_SCALE", "1"))

_FOLDER = Path(tempfile.mkdtemp(prefix="mcp-fuzz-"))
_BASE = write_tiny_model(_FOLDER / "base.mcp").read_bytes()
_PARTS = McpParts.of(_BASE)

VALUES = st.one_of(
    st.sampled_from([0, 1, -1, 2, 3, 7, 16, 31, 32, 33, 63, 64, 65, 128, 256, 1 << 31, 1 << 53,
                     (1 << 63) - 1, 1 << 64, 10 ** 30]),
    st.sampled_from([0.0, -1.0, 1e-30, 0.5, 1e308]),
    st.sampled_from(["", "llama", "qwen2", "int4", "int8", "q4_0", "q4_k", "q8_0", "f32", "f16", "bf16", "U8",
                     "I8", "F32", "BF16", "rows", "avx512", "avx2", "auto", "fp32", "linear", "llama3",
                     "freq_factors", "{{", "{% for %}", "zz"]),
    st.sampled_from([True, False, None, [], {}, [1], [64], [32], [64, 64], [64, 32], [0, 64], [64, 0],
                     [64, 64, 64], [1, 2, 3, 4, 5], [-64, -64], ["64"], {"a": 1}, [[1, 2]]]),
)


def _paths(value, prefix=()):
    """Every place in a JSON value: dict keys and list indices, depth first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


HEADER_PATHS = [p for p in _paths(_PARTS.header) if p]
# what the engine reads: drawn as often again as every other place together
FOCUS_PATHS = [p for p in HEADER_PATHS if p[0] in ("architecture", "tokenizer", "precision_plan")
               or p[0] == "tensors" and p[-1] in ("encoding", "shape", "layout") or p[-2:-1] == ("shape",)]
ENTRY_PATHS = [p for p in _paths({k: v for k, v in _PARTS.entries.items() if k != "__metadata__"}) if p]
PREFIX_BYTES = 8 + int.from_bytes(_BASE[:8], "little")


def _set(root, path, value, delete=False):
    target = root
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value


def _mutation():
    header = st.tuples(st.just("header"), st.sampled_from(HEADER_PATHS), VALUES)
    focus = st.tuples(st.just("header"), st.sampled_from(FOCUS_PATHS), VALUES)
    entry = st.tuples(st.just("entry"), st.sampled_from(ENTRY_PATHS), VALUES)
    drop = st.tuples(st.just("drop"), st.sampled_from(HEADER_PATHS + ENTRY_PATHS), st.booleans())
    table = st.tuples(st.just("table"), st.integers(0, len(_PARTS.header["tensors"]) - 1),
                      st.sampled_from(["remove", "double", "remove-entry"]))
    raw = st.tuples(st.just("byte"), st.integers(0, PREFIX_BYTES - 1), st.integers(0, 255))
    size = st.tuples(st.just("size"), st.integers(-200, 200), st.just(None))
    return st.one_of(focus, focus, focus, header, entry, entry, drop, table, raw, size)  # mostly structured


def _apply(mutations) -> bytes:
    parts = McpParts.of(_BASE)
    structural = [m for m in mutations if m[0] not in ("byte", "size")]
    for kind, where, what in structural:
        try:
            if kind == "header":
                _set(parts.header, where, what)
            elif kind == "entry":
                _set(parts.entries, where, what)
            elif kind == "drop":
                _set(parts.header if where in HEADER_PATHS and what else parts.entries, where, None, delete=True)
            else:
                _change_table(parts, where, what)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or replaced the place: skip this one
    raw = bytearray(parts.rebuild())
    for kind, where, what in mutations:
        if kind == "byte" and where < len(raw):
            raw[where] = what
        elif kind == "size":
            raw = raw[:where] if where < 0 else raw + bytes(where)
    return bytes(raw)


def _change_table(parts: McpParts, index: int, how: str) -> None:
    tensors = parts.header["tensors"]
    spec = tensors[index]
    if how == "remove":
        tensors.remove(spec)
    elif how == "double":
        tensors.append(dict(spec))
    else:
        del parts.entries[spec["name"]]


def check_file(path: Path) -> None:
    """What serving and inspect do with a file: only a ModelFormatError naming it may come out."""
    try:
        with open_model(path) as model_file:
            describe(model_file)
            NativeEngine(model_file, EngineOptions(device="cpu"))
    except ModelFormatError as exc:
        assert str(path) in str(exc), f"the error does not name the file: {exc}"
        assert "\n" not in str(exc).strip(), f"the error is not one line: {exc!r}"


@pytest.mark.slow
@settings(max_examples=1500 * SCALE, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_mutation(), min_size=1, max_size=3))
def test_mutated_mcp_files_raise_only_model_format_errors(mutations):
    path = _FOLDER / "mutated.mcp"
    path.write_bytes(_apply(mutations))
    check_file(path)


def test_the_unmutated_tiny_model_opens_and_builds():
    """The fuzzer's base is valid: what fails above fails because of a mutation."""
    path = _FOLDER / "base.mcp"
    with open_model(path) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu"))
    assert engine.header.architecture.num_layers == 1
    assert engine.tokenizer.encode("t1 t2") == [1, 5, 6]
