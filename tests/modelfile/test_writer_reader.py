"""Write a .mcp file, read it back bit for bit, and reject every kind of damaged or foreign file."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import load_file

from mcp.base.errors import ConfigError, ModelFormatError, ModelNotFoundError
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import TensorSpec, stored_shape
from mcp.modelfile.writer import write_model


def raises(kind: type[Exception], text: str):
    """``pytest.raises`` expecting ``text`` literally in the message."""
    return pytest.raises(kind, match=re.escape(text))


@pytest.fixture
def written(tmp_path: Path, tiny_header, tiny_tensors) -> tuple[Path, object]:
    path = tmp_path / "tiny.mcp"
    return path, write_model(path, tiny_header, tiny_tensors)


def _as_torch(value) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.from_numpy(value)


def test_round_trip_is_bit_identical(written, tiny_tensors) -> None:
    path, header = written
    with open_model(path, verify=True) as model:
        assert model.header == header
        assert model.path == path
        for name, original in tiny_tensors.items():
            stored = model.tensor(name)
            assert stored.dtype == _as_torch(original).dtype
            assert torch.equal(stored.view(torch.uint8), _as_torch(original).view(torch.uint8))


def test_writer_fills_each_sha256_from_the_stored_bytes(written, tiny_header, tiny_tensors) -> None:
    _, header = written
    assert {spec.sha256 for spec in tiny_header.tensors} == {""}
    for spec in header.tensors:
        raw = _as_torch(tiny_tensors[spec.name]).contiguous().view(torch.uint8).numpy().tobytes()
        assert spec.sha256 == hashlib.sha256(raw).hexdigest()
    assert [s.name for s in header.tensors] == [s.name for s in tiny_header.tensors]


def test_file_is_plain_safetensors_with_the_header_in_metadata(written) -> None:
    path, header = written
    tensors = load_file(path)
    assert tensors["model.embed_tokens.weight"].shape == (8, 34)
    assert tensors["model.embed_tokens.weight"].dtype == torch.uint8
    prefix_len = int.from_bytes(path.read_bytes()[:8], "little")
    assert (8 + prefix_len) % 8 == 0
    metadata = json.loads(path.read_bytes()[8 : 8 + prefix_len])["__metadata__"]
    assert metadata["format"] == "mcp"
    assert json.loads(metadata["mcp.header"])["format_version"] == 1
    assert metadata["mcp.header"] == header.to_json()


def test_tensors_are_memory_mapped_and_writes_do_not_reach_the_file(written) -> None:
    path, _ = written
    before = path.read_bytes()
    with open_model(path) as model:
        norm = model.tensor("model.norm.weight")
    norm[0] = 12345.0  # still valid after close; a private copy-on-write page
    assert norm[0].item() == 12345.0
    assert path.read_bytes() == before
    with pytest.raises(KeyError, match="no tensor named 'lm_head.weight'"):
        open_model(path).tensor("lm_head.weight")


def test_missing_file_is_model_not_found(tmp_path: Path) -> None:
    with raises(ModelNotFoundError, f"{tmp_path / 'absent.mcp'}: no such model file"):
        open_model(tmp_path / "absent.mcp")


@pytest.mark.parametrize("cut", ["one byte", "half"])
def test_truncated_file(written, cut: str) -> None:
    path, _ = written
    data = path.read_bytes()
    keep = len(data) - 1 if cut == "one byte" else len(data) // 2
    path.write_bytes(data[:keep])
    with raises(ModelFormatError, f"{path}: truncated: {keep} bytes, expected {len(data)}"):
        open_model(path)


def test_file_cut_inside_the_header(written) -> None:
    path, _ = written
    data = path.read_bytes()
    header_end = 8 + int.from_bytes(data[:8], "little")
    path.write_bytes(data[:100])
    with raises(ModelFormatError, "truncated or not a .mcp file: its safetensors header would run past the end "
                                  "of the file (100 bytes)") as caught:
        open_model(path)
    assert str(header_end) not in str(caught.value)  # a number read from the file is never echoed


def test_garbage_in_the_header_json(written) -> None:
    path, _ = written
    data = bytearray(path.read_bytes())
    data[8:40] = b"\xff\x00garbage" * 3 + b"\x01" * 5
    path.write_bytes(bytes(data))
    with raises(ModelFormatError, f"{path}: not a readable .mcp file: its safetensors header is not valid UTF-8 JSON"):
        open_model(path)


def test_garbage_header_length(written) -> None:
    path, _ = written
    data = path.read_bytes()
    path.write_bytes(b"\x13\x37\xde\xad\xbe\xef\x42\x99" + data[8:])
    with pytest.raises(ModelFormatError, match="not a .mcp file \\(its first 8 bytes are not a plausible"):
        open_model(path)


def test_unknown_format_version(written) -> None:
    path, _ = written
    data = path.read_bytes()
    edited = data.replace(b'\\"format_version\\":1', b'\\"format_version\\":2')
    assert edited != data and len(edited) == len(data)
    path.write_bytes(edited)
    with raises(ModelFormatError, f"{path}: unknown .mcp format version 2"):
        open_model(path)


def test_flipped_byte_is_caught_by_verify(written) -> None:
    path, _ = written
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # the last bytes are the uint8 (block-encoded) tensor's
    path.write_bytes(bytes(data))
    expected = re.escape(f"{path}: tensor model.embed_tokens.weight is corrupt")
    with open_model(path) as model:  # opening alone does not hash
        with pytest.raises(ModelFormatError, match=expected):
            model.verify()
    with pytest.raises(ModelFormatError, match=expected):
        open_model(path, verify=True)


def test_gguf_file_is_refused_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    with raises(ModelFormatError, f"{path}: not a .mcp file, it is a GGUF file") as info:
        open_model(path)
    assert "mcp2026 compile" in str(info.value)


def test_plain_safetensors_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_numpy({"w": np.zeros((2, 2), np.float32)}, path, metadata={"format": "pt"})
    with raises(ModelFormatError, f"{path}: not a .mcp file: a safetensors file without the .mcp metadata"):
        open_model(path)


@pytest.mark.parametrize("content", [b"", b"tiny"])
def test_tiny_or_empty_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.mcp"
    path.write_bytes(content)
    with raises(ModelFormatError, f"{path}: not a .mcp file ({len(content)} bytes"):
        open_model(path)


def _save_with_header(path: Path, header_json: str, tensors: dict[str, np.ndarray]) -> None:
    save_numpy(tensors, path, metadata={"format": "mcp", "mcp.header": header_json})


def test_header_listing_a_tensor_the_file_lacks(written, tiny_tensors, tmp_path: Path) -> None:
    _, header = written
    path = tmp_path / "fewer.mcp"
    _save_with_header(path, header.to_json(), {"model.norm.weight": tiny_tensors["model.norm.weight"]})
    only = sorted(spec.name for spec in header.tensors if spec.name != "model.norm.weight")[:5]
    message = (
        f"{path}: the .mcp header and the stored tensors disagree (in the header only: {only}, stored only: [])"
    )
    with raises(ModelFormatError, message):
        open_model(path)


def test_file_holding_a_tensor_the_header_lacks(written, tiny_tensors, tmp_path: Path) -> None:
    _, header = written
    path = tmp_path / "more.mcp"
    smaller = dataclasses.replace(header, tensors=header.tensors[:1])
    arrays = {"model.norm.weight": tiny_tensors["model.norm.weight"], "extra": np.ones(3, np.float32)}
    _save_with_header(path, smaller.to_json(), arrays)
    with raises(ModelFormatError, "(in the header only: [], stored only: ['extra'])"):
        open_model(path)


@pytest.mark.parametrize(
    ("array", "stored"),
    [(np.zeros(32, np.float16), "F16 [32]"), (np.zeros(16, np.float32), "F32 [16]")],
)
def test_tensor_stored_with_wrong_dtype_or_shape(written, tmp_path: Path, array, stored: str) -> None:
    _, header = written
    path = tmp_path / "wrong.mcp"
    smaller = dataclasses.replace(header, tensors=header.tensors[:1])
    _save_with_header(path, smaller.to_json(), {"model.norm.weight": array})
    with raises(ModelFormatError, f"{path}: tensor model.norm.weight is stored as {stored}, but the header's f32 [32] needs F32 [32]"):
        open_model(path)


@pytest.mark.parametrize(
    ("header_json", "message"),
    [('{"format_version": 1}', "the .mcp header is malformed"), ("{not json", "the .mcp header is not valid JSON")],
)
def test_malformed_mcp_header(tmp_path: Path, header_json: str, message: str) -> None:
    path = tmp_path / "bad.mcp"
    _save_with_header(path, header_json, {"w": np.zeros(2, np.float32)})
    with raises(ModelFormatError, f"{path}: {message}"):
        open_model(path)


def test_writer_refuses_a_missing_folder(tmp_path: Path, tiny_header, tiny_tensors) -> None:
    path = tmp_path / "no" / "such" / "folder" / "x.mcp"
    with raises(ConfigError, f"the folder {path.parent} does not exist"):
        write_model(path, tiny_header, tiny_tensors)
    assert not (tmp_path / "no").exists()


def test_writer_failure_midway_leaves_nothing(tmp_path: Path, tiny_header, tiny_tensors) -> None:
    path = tmp_path / "x.mcp"
    bad = dict(tiny_tensors, **{"model.embed_tokens.weight": np.zeros((8, 33), np.uint8)})
    with raises(ModelFormatError, "tensor model.embed_tokens.weight (q8_0) has stored shape (8, 33), expected (8, 34)"):
        write_model(path, tiny_header, bad)
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_tensors_not_matching_the_header(tmp_path: Path, tiny_header, tiny_tensors) -> None:
    tensors = dict(tiny_tensors)
    tensors["surplus"] = tensors.pop("model.norm.weight")
    with raises(ModelFormatError, "(missing: ['model.norm.weight'], not in header: ['surplus'])"):
        write_model(tmp_path / "x.mcp", tiny_header, tensors)
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_a_wrong_dtype(tmp_path: Path, tiny_header, tiny_tensors) -> None:
    tensors = dict(tiny_tensors, **{"model.layers.0.mlp.up_proj.weight": torch.zeros(64, 32)})
    with pytest.raises(ModelFormatError, match="tensor model.layers.0.mlp.up_proj.weight is torch.float32, expected BF16"):
        write_model(tmp_path / "x.mcp", tiny_header, tensors)


def test_rewriting_replaces_the_old_file_whole(written, tiny_header, tiny_tensors) -> None:
    path, first = written
    changed = dict(tiny_tensors, **{"model.norm.weight": np.full(32, 2.0, np.float32)})
    second = write_model(path, tiny_header, changed)
    assert second.tensor("model.norm.weight").sha256 != first.tensor("model.norm.weight").sha256
    with open_model(path, verify=True) as model:
        assert torch.equal(model.tensor("model.norm.weight"), torch.full((32,), 2.0))
    assert [p.name for p in path.parent.iterdir()] == ["tiny.mcp"]


def test_written_file_has_the_umask_permissions(written) -> None:
    path, _ = written
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_tensors_are_views_of_one_mapping_in_file_order(written, tiny_header) -> None:
    """Every tensor is a view of the one private mapping, at its byte range in the file."""
    path, _ = written
    prefix_len = int.from_bytes(path.read_bytes()[:8], "little")
    entries = json.loads(path.read_bytes()[8 : 8 + prefix_len])
    with open_model(path) as model:
        tensors = {spec.name: model.tensor(spec.name) for spec in tiny_header.tensors}
    mapping = {tensor.untyped_storage().data_ptr() for tensor in tensors.values()}
    assert len(mapping) == 1
    base = mapping.pop()
    for name, tensor in tensors.items():
        start = entries[name]["data_offsets"][0]
        assert tensor.data_ptr() - base == 8 + prefix_len + start


def test_tensor_at_an_unaligned_offset_reads_back(written, tiny_tensors) -> None:
    """Another writer may leave the data section at an offset that is not a multiple of an
    item size (safetensors does not require the padding): such a tensor is read as a copy."""
    path, _ = written
    data = path.read_bytes()
    prefix_len = int.from_bytes(data[:8], "little")
    shifted = (prefix_len + 1).to_bytes(8, "little") + data[8 : 8 + prefix_len] + b" " + data[8 + prefix_len :]
    path.write_bytes(shifted)
    with open_model(path, verify=True) as model:
        for name, original in tiny_tensors.items():
            stored = model.tensor(name)
            assert stored.dtype == _as_torch(original).dtype
            assert torch.equal(stored.view(torch.uint8), _as_torch(original).view(torch.uint8))


def test_each_storage_dtype_is_stored_together_in_header_order(tmp_path: Path, tiny_header) -> None:
    """f16 and bf16 have one item size; a matrix's f16 group parameters and its bf16 kernel
    form alternate in the header, yet the f16 arrays of consecutive matrices lie back to
    back (what lets the loader fuse q/k/v without a copy), as do the codes."""
    specs = []
    for part in ("q", "k", "v"):
        name = f"model.layers.0.self_attn.{part}_proj.weight"
        specs += [dataclasses.replace(tiny_header.tensors[1], name=name),
                  TensorSpec(name + ".qparams", "f16", (8, 1, 2), ""),
                  TensorSpec(name + ".scale_zero", "bf16", (1, 8, 2), "")]
    header = dataclasses.replace(tiny_header, tensors=tuple(specs))
    arrays = {spec.name: np.zeros(stored_shape(spec.encoding, spec.shape),
                                  dtype={"f16": np.float16, "bf16": np.uint16}.get(spec.encoding, np.uint8))
              for spec in specs}
    arrays = {name: torch.from_numpy(a).view(torch.bfloat16) if name.endswith("scale_zero") else a
              for name, a in arrays.items()}
    write_model(tmp_path / "m.mcp", header, arrays)
    prefix_len = int.from_bytes((tmp_path / "m.mcp").read_bytes()[:8], "little")
    entries = json.loads((tmp_path / "m.mcp").read_bytes()[8 : 8 + prefix_len])
    for suffix in ("", ".qparams", ".scale_zero"):
        ranges = [entries[f"model.layers.0.self_attn.{p}_proj.weight{suffix}"]["data_offsets"] for p in "qkv"]
        assert ranges[0][1] == ranges[1][0] and ranges[1][1] == ranges[2][0], (suffix, ranges)
