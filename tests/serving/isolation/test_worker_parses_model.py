"""With worker isolation the model file is parsed in the sandboxed worker only (issue 28,
finding 7): the supervisor process never opens it, serves from the header the worker checked,
and a bad file arrives as the worker's typed ModelFormatError naming the file and the problem."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp.base.errors import ModelFormatError
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig
from mcp.runtime.session import Session
from mcp.serving.host import ModelHost

sys.path.insert(0, str(Path(__file__).parents[2] / "modelfile"))
from bad_files import with_header, write_tiny_model  # noqa: E402

pytestmark = pytest.mark.slow  # real worker processes
_OPENED: list[str] = []


def _record_opens(event: str, args: tuple) -> None:
    if event == "open" and args and isinstance(args[0], (str, bytes, Path)):
        _OPENED.append(str(args[0]))


sys.addaudithook(_record_opens)  # every open() and os.open() in this (the supervisor's) process


def _host() -> ModelHost:
    return ModelHost(Session(RuntimeConfig(device="cpu", num_threads=1, serving=ServingConfig(isolation="worker"))))


def test_the_supervisor_never_opens_the_model_file(tmp_path):
    path = write_tiny_model(tmp_path / "tiny.mcp")
    host = _host()
    try:
        _OPENED.clear()
        host.load(ServedModel("tiny", str(path)))
        opened = [p for p in _OPENED if Path(p).name == "tiny.mcp"]
        with host.acquire("tiny") as version:
            result = version.model.infer("t1 t2", max_tokens=3, temperature=0.0, ignore_eos=True, raw=True)
            assert version.model.header.architecture.num_layers == 1  # the worker's checked header
    finally:
        host.close()
    assert opened == [], f"the supervisor opened the model file: {opened}"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 3)  # BOS t1 t2: tokenized here


def test_a_bad_file_is_the_workers_model_format_error(tmp_path):
    good = write_tiny_model(tmp_path / "tiny.mcp")
    bad = tmp_path / "int4-1d.mcp"

    def one_dimensional(parts):
        parts.tensor("model.layers.0.self_attn.q_proj.weight")["shape"] = [64]

    bad.write_bytes(with_header(good.read_bytes(), one_dimensional))
    host = _host()
    try:
        with pytest.raises(ModelFormatError) as caught:
            host.load(ServedModel("bad", str(bad)))
    finally:
        host.close()
    message = str(caught.value)
    assert str(bad) in message and "an int4 tensor is a matrix [N, K]" in message
    assert "/proc/self/fd" not in message  # the worker names the file, not its descriptor
