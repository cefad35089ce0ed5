"""The bad model files of issue 28 (findings 7, 8, 12), one by one: each is a ModelFormatError
that names the file and the problem, from ``open_model`` and from the CLI (one line, exit 2,
no traceback), and no message echoes the file's bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from bad_files import with_header, write_tiny_model  # noqa: E402

from mcp.base.errors import ModelFormatError  # noqa: E402
from mcp.engine.engine import EngineOptions, NativeEngine  # noqa: E402
from mcp.modelfile.reader import open_model  # noqa: E402

Q_PROJ = "model.layers.0.self_attn.q_proj.weight"


def _arch(field, value):
    def change(parts):
        parts.header["architecture"][field] = value
    return change


def _tensor(name, field, value):
    def change(parts):
        parts.tensor(name)[field] = value
    return change


def _tokenizer(field, value):
    def change(parts):
        parts.header["tokenizer"][field] = value
    return change


def _rename(parts, old, new):
    """Rename a tensor in the header and the safetensors entries alike (the file stays consistent)."""
    parts.tensor(old)["name"] = new
    parts.entries[new] = parts.entries.pop(old)


# name -> (how the tiny model is broken, what the message must say)
CORPUS = {
    "int4-declared-1d": (_tensor(Q_PROJ, "shape", [64]), "an int4 tensor is a matrix [N, K]"),
    "int4-rows-not-aligned": (_tensor(Q_PROJ, "shape", [32, 64]), "int4 tensor has a multiple of 64 rows"),
    "int4-unknown-layout": (_tensor(Q_PROJ, "layout", "sideways"), "int4 layout 'sideways' is not one of"),
    "zero-heads": (_arch("num_attention_heads", 0), "architecture.num_attention_heads is 0"),
    "zero-layers": (_arch("num_layers", 0), "architecture.num_layers is 0"),
    "huge-layers": (_arch("num_layers", 1 << 40), "architecture.num_layers is 1099511627776"),
    "heads-not-shared-evenly": (_arch("num_kv_heads", 3), "not a multiple of num_kv_heads (3)"),
    "head-dim-against-q-rows": (_arch("head_dim", 16), "needs [32, 64]"),
    "odd-head-dim": (_arch("head_dim", 31), "head_dim is 31; rotary embeddings need it even"),
    "string-hidden-size": (_arch("hidden_size", "64"), "architecture.hidden_size must be an integer, not str"),
    "negative-eps": (_arch("rms_norm_eps", -1.0), "architecture.rms_norm_eps is -1.0"),
    "unknown-architecture": (_arch("architecture", "mamba"), "architecture 'mamba' is not supported"),
    "eos-outside-vocab": (_tokenizer("eos_token_ids", [64]), "tokenizer.eos_token_ids[0] is 64, outside"),
    "broken-tokenizer": (_tokenizer("tokenizer_json", "{}"), "the model's tokenizer cannot be loaded"),
    "broken-chat-template": (_tokenizer("chat_template", "{% for %}"), "chat template is not valid Jinja"),
    "unknown-encoding": (_tensor("model.norm.weight", "encoding", "f8"), "unknown encoding 'f8'"),
    "missing-companion": (lambda p: _rename(p, Q_PROJ + ".qparams", Q_PROJ + ".scales"),
                          "lacks tensors the architecture needs: model.layers.0.self_attn.q_proj.weight.qparams"),
    "unknown-precision": (lambda p: p.header["precision_plan"].update(default=0), "precision_plan.default"),
}


@pytest.fixture(scope="module")
def tiny_bytes(tmp_path_factory) -> bytes:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny.mcp").read_bytes()


def _load(path: Path) -> None:
    with open_model(path) as model_file:
        NativeEngine(model_file, EngineOptions(device="cpu"))


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_each_bad_file_is_a_model_format_error_naming_file_and_problem(case, tiny_bytes, tmp_path):
    change, expected = CORPUS[case]
    path = tmp_path / f"{case}.mcp"
    path.write_bytes(with_header(tiny_bytes, change))
    with pytest.raises(ModelFormatError) as caught:
        _load(path)
    assert str(path) in str(caught.value) and expected in str(caught.value)


def test_a_foreign_file_is_refused_without_echoing_its_bytes(tmp_path):
    """/etc/shadow's first 8 bytes as an integer used to be in the message ("root:*:2")."""
    shadow = tmp_path / "shadow"
    shadow.write_bytes(b"root:*:20000:0:99999:7:::\ndaemon:*:20000:0:99999:7:::\n")
    number = str(int.from_bytes(b"root:*:2", "little"))
    with pytest.raises(ModelFormatError) as caught:
        open_model(shadow)
    said = str(caught.value).removeprefix(str(shadow))
    assert "not a .mcp file" in said and number not in said and "root" not in said
    short = tmp_path / "short"  # a length that fits under the cap but runs past the file
    short.write_bytes((1000).to_bytes(8, "little") + b"{}")
    with pytest.raises(ModelFormatError) as caught:
        open_model(short)
    assert "1000" not in str(caught.value) and "1008" not in str(caught.value)
    not_json = tmp_path / "not-json"
    not_json.write_bytes((12).to_bytes(8, "little") + b"secret-words")
    with pytest.raises(ModelFormatError) as caught:
        open_model(not_json)
    assert "secret" not in str(caught.value) and "not valid UTF-8 JSON" in str(caught.value)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp.commands.cli", *args], capture_output=True, text=True,
                          timeout=300)


def _assert_one_line_error(done: subprocess.CompletedProcess, *expected: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp2026: error: "), done.stderr
    for text in expected:
        assert text in lines[0]


@pytest.mark.slow
def test_cli_inspect_and_run_print_one_line_and_exit_2(tiny_bytes, tmp_path):
    path = tmp_path / "int4-1d.mcp"
    path.write_bytes(with_header(tiny_bytes, CORPUS["int4-declared-1d"][0]))
    _assert_one_line_error(_cli("inspect", str(path)), str(path), "an int4 tensor is a matrix")
    _assert_one_line_error(_cli("run", str(path), "hello"), str(path), "an int4 tensor is a matrix")
    served = _cli("serve", "--port", "0", "--model", str(path))  # loads it in a worker: the worker's error
    assert served.returncode == 2 and "Traceback" not in served.stderr, served.stderr
    assert served.stderr.strip().splitlines()[-1].startswith(f"mcp2026: error: {path}: tensor ")
    heads = tmp_path / "zero-heads.mcp"
    heads.write_bytes(with_header(tiny_bytes, CORPUS["zero-heads"][0]))
    _assert_one_line_error(_cli("inspect", "--plan", str(heads)), "num_attention_heads is 0")
