"""Compiling BERT folders: the pooling as sentence-transformers' files say, the tensor table without
the pooler, and a folder asking for what the encoder cannot do refused with a clear error."""

from __future__ import annotations

import json
import shutil

import pytest

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.compiler.compiler import compile_model, load_source


@pytest.fixture
def folder(minilm_folder, tmp_path):
    """A writable copy of all-MiniLM-L6-v2's folder (the safetensors linked, not copied)."""
    copy = tmp_path / "minilm"
    shutil.copytree(minilm_folder, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").symlink_to(minilm_folder / "model.safetensors")
    return copy


def test_pooling_and_tensors_come_from_the_folder(folder):
    source = load_source(folder)
    arch = source.architecture
    assert (arch.pooling.mode, arch.pooling.normalize, arch.pooling.max_tokens) == ("mean", True, 256)
    names = {t.name for t in source.tensors}
    assert "pooler.dense.weight" not in names and "embeddings.position_ids" not in names
    assert len(names) == 5 + 16 * 6
    assert (source.tokenizer.bos_token, source.tokenizer.eos_token, source.tokenizer.add_eos_token) == \
        ("[CLS]", "[SEP]", True)


def test_without_modules_json_it_is_a_plain_mean_pooled_bert(folder):
    (folder / "modules.json").unlink()
    (folder / "sentence_bert_config.json").unlink()
    pooling = load_source(folder).architecture.pooling
    assert (pooling.mode, pooling.normalize, pooling.max_tokens) == ("mean", False, 512)


def test_cls_pooling_is_read(folder):
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    assert load_source(folder).architecture.pooling.mode == "cls"


def test_max_pooling_is_refused_by_name(folder):
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(UnsupportedModelError, match="pooling_mode_max_tokens"):
        load_source(folder)


def test_another_activation_is_refused(folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(UnsupportedModelError, match="hidden_act 'relu'"):
        load_source(folder)


def test_bad_json_names_the_file(folder):
    (folder / "modules.json").write_text("[{")
    with pytest.raises(ModelFormatError, match="modules.json: not valid JSON"):
        load_source(folder)


def test_compile_writes_a_file_that_opens(folder, tmp_path):
    header = compile_model(folder, tmp_path / "m.mcp", precision="fp32")
    assert header.architecture.architecture == "bert" and header.lineage.source_format == "hf-safetensors"


def test_inspect_says_how_it_embeds(minilm_mcp):
    from mcp.modelfile.inspect import describe
    from mcp.modelfile.reader import open_model

    with open_model(minilm_mcp) as model_file:
        text = describe(model_file, show_plan=False, show_tensors=False)
    assert "embeddings       mean pooling, L2-normalized, 384 dims, inputs up to 256 tokens" in text
    assert "LayerNorm eps    1e-12" in text and "RoPE" not in text
