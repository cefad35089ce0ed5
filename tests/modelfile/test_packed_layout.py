"""The layout a file is packed in is data the compiler writes, never this machine's kernels: the
same GGUF gives the same tensors whether or not the compiling machine has the native kernels."""

from __future__ import annotations

import pytest

from mcp.compiler.catalog import DEFAULT_MODEL
from mcp.compiler.compiler import PACKED_LAYOUT, compile_model
from mcp.engine import kernels
from mcp.modelfile.reader import open_model


def _int4_layouts_and_hashes(path):
    with open_model(path) as model:
        specs = model.header.tensors
    return ({spec.layout for spec in specs if spec.encoding == "int4"},
            {spec.name: spec.sha256 for spec in specs})


@pytest.mark.slow
def test_a_machine_without_the_native_kernels_writes_the_same_file(smollm2_gguf, smollm2_auto_mcp, tmp_path,
                                                                   monkeypatch):
    int4_here = tmp_path / "int4-here.mcp"
    compile_model(smollm2_gguf, int4_here, name=DEFAULT_MODEL, precision="int4")
    monkeypatch.setattr(kernels, "available", lambda: False)
    auto_there, int4_there = tmp_path / "auto-there.mcp", tmp_path / "int4-there.mcp"
    compile_model(smollm2_gguf, auto_there, name=DEFAULT_MODEL)
    compile_model(smollm2_gguf, int4_there, name=DEFAULT_MODEL, precision="int4")
    # auto keeps the GGUF's blocks: no int4 at all, the same tensors as this machine's compile
    assert _int4_layouts_and_hashes(auto_there) == _int4_layouts_and_hashes(smollm2_auto_mcp)
    # packed int4 (opt-in) is always in the one recorded layout
    layouts, hashes = _int4_layouts_and_hashes(int4_there)
    assert layouts == {PACKED_LAYOUT} == {"rows"}
    assert hashes == _int4_layouts_and_hashes(int4_here)[1]
