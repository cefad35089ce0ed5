"""Each artifact format lands in the same schema; an unreadable one is an error and no row."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mcp.base.errors import ModelFormatError, ModelNotFoundError
from mcp.compiler.hf_source import folder_sha256
from mcp.gateway.registry.artifacts import read_artifact
from mcp.gateway.registry.artifacts.pbtxt import parse_pbtxt


def test_hf_folder(hf_folder: Path):
    meta = read_artifact(hf_folder)
    assert (meta.format, meta.name, meta.architecture) == ("hf", "tiny-llama", "LlamaForCausalLM")
    assert meta.parameter_count == 64 * 16 + 32 * 16 + 16
    assert (meta.quantization, meta.context_length, meta.license) == ("f16", 4096, "mit")
    assert meta.sha256 == folder_sha256(hf_folder)
    assert meta.size_bytes == sum(p.stat().st_size for p in hf_folder.iterdir())
    assert meta.uri == hf_folder.resolve().as_uri() and meta.lineage["model_type"] == "llama"


def test_onnx_file(onnx_file: Path):
    meta = read_artifact(onnx_file)
    assert (meta.format, meta.name, meta.parameter_count, meta.quantization) == ("onnx", "tiny-mlp", 36, "fp32")
    assert (meta.license, meta.context_length) == ("apache-2.0", 512)
    assert meta.sha256 == hashlib.sha256(onnx_file.read_bytes()).hexdigest()
    assert meta.lineage["producer"] == "mcp-tests" and meta.lineage["opsets"] == {"ai.onnx": 17}


def test_triton_repository_newest_version(triton_repo: Path):
    meta = read_artifact(triton_repo)
    assert (meta.format, meta.name, meta.architecture) == ("triton", "tiny-mlp", "onnxruntime_onnx")
    assert (meta.parameter_count, meta.quantization) == (36 + 16, "int8")  # version 2 holds an int8 tensor
    assert (meta.license, meta.context_length) == ("bsd-3-clause", 512)
    assert meta.lineage["model_version"] == "2" and meta.lineage["max_batch_size"] == 8
    assert meta.lineage["inputs"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [8]}]
    assert read_artifact(triton_repo / "tiny-mlp") == meta


def test_pbtxt_values():
    parsed = parse_pbtxt('a: "x\\"y" n: -3 f: 1.5 b: true e: KIND_GPU l: [1, 2] m < k: 1 >; r { } r { z: 2 }')
    assert parsed == {"a": ['x"y'], "n": [-3], "f": [1.5], "b": [True], "e": ["KIND_GPU"], "l": [1, 2],
                      "m": [{"k": [1]}], "r": [{}, {"z": [2]}]}


@pytest.mark.parametrize("text, where", [('name: "x"\ninput [ { name: "a" }', ":2: missing ']'"),
                                         ('name "x"', ":1: field name needs ':'"),
                                         ("a: {", ":1: missing '}'")])
def test_pbtxt_errors_name_the_line(text, where):
    with pytest.raises(ModelFormatError, match=where.replace("[", "\\[").replace("]", "\\]")):
        parse_pbtxt(text, source="config.pbtxt")


def _garbage(path: Path) -> Path:
    path.write_bytes(b"\x08\x96\x01 this is not a model" * 10)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda d: _garbage(d / "x.onnx"), "not a readable ONNX model"),
    (lambda d: _garbage(d / "x.gguf"), "not a readable GGUF file"),
    (lambda d: _garbage(d / "x.mcp"), "not a .mcp file"),
    (lambda d: _garbage(d / "x.bin"), "unknown artifact format"),
    (lambda d: (d / "empty").mkdir() or d / "empty", "not a model folder"),
])
def test_unreadable_artifacts_are_clear_errors(tmp_path: Path, make, message):
    with pytest.raises(ModelFormatError, match=message):
        read_artifact(make(tmp_path))


def test_broken_triton_and_hf_folders(tmp_path: Path, triton_repo: Path, hf_folder: Path):
    (triton_repo / "tiny-mlp" / "config.pbtxt").write_text("name: [")
    with pytest.raises(ModelFormatError, match="config.pbtxt:1"):
        read_artifact(triton_repo)
    (hf_folder / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ModelFormatError, match="safetensors"):
        read_artifact(hf_folder)
    with pytest.raises(ModelNotFoundError):
        read_artifact(tmp_path / "missing.gguf")


def test_triton_model_without_versions(tmp_path: Path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.pbtxt").write_text('name: "m" backend: "python"')
    with pytest.raises(ModelFormatError, match="no version folder"):
        read_artifact(model)


def test_quantized_onnx(tmp_path: Path, make_onnx):
    assert read_artifact(make_onnx(tmp_path / "q.onnx", quantized=True)).quantization == "int8"
