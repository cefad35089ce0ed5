"""Data lineage declared at compile time (``--lineage``, ``--dataset``): recorded in the header,
shown by ``inspect``; headers written before it existed still load."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import torch

from mcp.base.errors import ConfigError
from mcp.commands.cli import main
from mcp.modelfile.lineage_file import load_lineage_file, parse_dataset_flag
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import Dataset, ModelHeader

LINEAGE_YAML = """\
base_model: HuggingFaceTB/SmolLM2-135M
license: apache-2.0
datasets:
  - name: smoltalk
    source: hf://datasets/HuggingFaceTB/smoltalk
    license: apache-2.0
    path: data/smoltalk.jsonl
    preprocessing: [dedup, language-filter, chat-format]
"""


@pytest.fixture
def llama_folder(tmp_path, add_tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=49152, max_position_embeddings=128)
    LlamaForCausalLM(config).save_pretrained(tmp_path / "tiny-llama")
    return add_tokenizer(tmp_path / "tiny-llama")


def test_compile_records_declared_datasets_and_inspect_shows_them(llama_folder, tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "smoltalk.jsonl").write_text('{"messages": []}\n')
    lineage_file = tmp_path / "lineage.yaml"
    lineage_file.write_text(LINEAGE_YAML)
    out = tmp_path / "tiny.mcp"
    digest = "cd" * 32
    assert main(["compile", str(llama_folder), "-o", str(out), "--lineage", str(lineage_file),
                 "--dataset", f"name=wiki,license=cc-by-sa-4.0,sha256={digest}"]) == 0
    with open_model(out) as model:
        lineage = model.header.lineage
    assert lineage.base_model == "HuggingFaceTB/SmolLM2-135M" and lineage.license == "apache-2.0"
    smoltalk_sha = hashlib.sha256(b'{"messages": []}\n').hexdigest()
    assert lineage.datasets == (
        Dataset("smoltalk", "apache-2.0", smoltalk_sha, "hf://datasets/HuggingFaceTB/smoltalk",
                ("dedup", "language-filter", "chat-format")),
        Dataset("wiki", "cc-by-sa-4.0", digest, None, ()),
    )
    capsys.readouterr()
    assert main(["inspect", str(out), "--plan"]) == 0
    shown = capsys.readouterr().out
    assert "datasets (2)" in shown and "dedup -> language-filter -> chat-format" in shown
    assert smoltalk_sha in shown and "cc-by-sa-4.0" in shown


def test_a_declared_hash_must_match_the_file(tmp_path):
    (tmp_path / "d.bin").write_bytes(b"data")
    with pytest.raises(ConfigError, match="has sha256 .*not the declared"):
        parse_dataset_flag(f"name=d,path={tmp_path / 'd.bin'},sha256={'0' * 64}")
    with pytest.raises(ConfigError, match="'color=red' is not KEY=VALUE"):
        parse_dataset_flag("name=d,color=red")
    with pytest.raises(ConfigError, match="sha256: must be 64 hex digits"):
        parse_dataset_flag("name=d,sha256=abc")
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets:\n  - license: mit\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: datasets.0.name: Field required"):
        load_lineage_file(bad)


def test_a_header_without_data_lineage_still_loads(tiny_header):
    data = json.loads(tiny_header.to_json())
    assert data["lineage"].pop("datasets") == []
    old = ModelHeader.from_json(json.dumps(data))
    assert old.lineage.datasets == () and old == tiny_header
    declared = Dataset("d", "mit", "ab" * 32, "s3://bucket/d", ("tokenize",))
    with_data = dataclasses.replace(tiny_header, lineage=dataclasses.replace(tiny_header.lineage, datasets=(declared,)))
    assert ModelHeader.from_json(with_data.to_json()).lineage.datasets == (declared,)
