"""Engine specs resolve to backends; unknown ones and missing packages are refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp.backends import registry
from mcp.backends.base import BackendError, ScoreKind
from mcp.backends.registry import BackendEntry, BackendUnavailable, ModelSources, create_backend, parse_spec

SOURCES = ModelSources(Path("model.gguf"), Path("model.mcp"), lambda text: [len(text)])


@pytest.mark.parametrize(("spec", "parsed"), [
    ("native-fp32", ("native", "fp32")), ("native-int4", ("native", "int4")), ("native-int8", ("native", "int8")),
    ("transformers", ("transformers", "")), ("llamacpp", ("llamacpp", "")),
    ("http=http://127.0.0.1:8000#m", ("http", "http://127.0.0.1:8000#m")),
])
def test_specs_parse(spec, parsed):
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["native", "native-int3", "vllm", "http", ""])
def test_unknown_engines_are_refused_with_the_known_ones(spec):
    with pytest.raises(BackendError, match="unknown engine .* use one of native-fp32, native-int4"):
        parse_spec(spec)


def test_backends_are_created_unloaded_with_their_capabilities():
    native = create_backend("native-int8", SOURCES)
    assert native.name == "native-int8" and native.options.precision == "int8"
    assert native.capabilities.scores is ScoreKind.LOGITS and not native.health().ok
    http = create_backend("http=http://127.0.0.1:9#tiny", SOURCES)
    assert http.capabilities.scores is ScoreKind.NONE and http.model_name == "tiny"
    with pytest.raises(BackendError, match="not loaded"):
        native.score(None, 5)


def test_http_needs_a_real_url():
    with pytest.raises(BackendError, match="must start with http://"):
        create_backend("http=127.0.0.1:8000", SOURCES)


def test_a_missing_package_names_the_extra(monkeypatch):
    ghost = BackendEntry("mcp.backends.native", ("no_such_package_mcp2026",), "ghost", lambda *a: None)
    monkeypatch.setitem(registry.BACKENDS, "llamacpp", ghost)
    with pytest.raises(BackendUnavailable, match=r"needs no_such_package_mcp2026.*pip install 'mcp2026\[ghost\]'"):
        create_backend("llamacpp", SOURCES)


def test_an_hf_folder_goes_to_transformers_and_llamacpp_refuses_it(tmp_path, monkeypatch):
    folder = ModelSources(tmp_path, Path("model.mcp"), lambda text: [len(text)])
    assert create_backend("transformers", folder).source == tmp_path
    llamacpp = registry.BACKENDS["llamacpp"]  # installed or not, the folder is refused first
    monkeypatch.setitem(registry.BACKENDS, "llamacpp", BackendEntry("mcp.backends.base", (), "", llamacpp.build))
    with pytest.raises(BackendError, match="the llamacpp engine reads GGUF files, not .*: give --model a .gguf file"):
        create_backend("llamacpp", folder)
