"""``registry add`` of a .mcp records its model and data lineage in columns of their own
(migration 0003) and whether a signature lies beside it; SQLite and PostgreSQL alike."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mcp.commands.cli import main
from mcp.gateway.registry.artifacts import read_artifact
from mcp.governance.signing.keys import init_keys, load_identity
from mcp.governance.signing.models import sign_model
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import Dataset
from mcp.modelfile.writer import write_model

DATASET = Dataset("smoltalk", "apache-2.0", "ef" * 32, "hf://datasets/HuggingFaceTB/smoltalk", ("dedup", "chat-format"))


@pytest.fixture
def model_with_datasets(tiny_mcp, tmp_path):
    """The tiny model rewritten with a base model and one declared dataset in its lineage."""
    out = tmp_path / "released.mcp"
    with open_model(tiny_mcp) as source:
        lineage = dataclasses.replace(source.header.lineage, base_model="tiny-base", datasets=(DATASET,))
        header = dataclasses.replace(source.header, lineage=lineage)
        write_model(out, header, {spec.name: source.tensor(spec.name) for spec in header.tensors})
    return out


def test_registry_add_records_lineage_columns(registry, model_with_datasets):
    version = registry.register(read_artifact(model_with_datasets), "released", "1")
    assert version.base_model == "tiny-base"
    assert version.source_sha256 == version.lineage["source_sha256"] and len(version.source_sha256) == 64
    assert version.datasets == (dataclasses.asdict(DATASET) | {"preprocessing": ["dedup", "chat-format"]},)
    assert version.signature_status == "unsigned"
    again = registry.get("released", "1")
    assert again.datasets == version.datasets and again.base_model == "tiny-base"


def test_registry_show_prints_datasets_and_a_signed_status(registry_url, model_with_datasets, tmp_path, capsys):
    keys = init_keys(tmp_path / "keys")
    sign_model(model_with_datasets, load_identity(keys.signing_key, keys.signing_cert))
    assert main(["registry", "--registry", registry_url, "add", str(model_with_datasets), "--name", "rel"]) == 0
    capsys.readouterr()
    assert main(["registry", "--registry", registry_url, "show", "rel:1"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["signature_status"] == "signed" and shown["base_model"] == "tiny-base"
    assert [d["name"] for d in shown["datasets"]] == ["smoltalk"]


def test_registry_add_with_ca_records_verified_or_invalid(registry_url, model_with_datasets, tmp_path, capsys):
    keys, other = init_keys(tmp_path / "keys"), init_keys(tmp_path / "other")
    sign_model(model_with_datasets, load_identity(keys.signing_key, keys.signing_cert))

    def add(version: str, ca) -> str:
        assert main(["registry", "--registry", registry_url, "add", str(model_with_datasets), "--name", "rel",
                     "--version", version, "--ca", str(ca)]) == 0
        capsys.readouterr()
        assert main(["registry", "--registry", registry_url, "show", f"rel:{version}"]) == 0
        return json.loads(capsys.readouterr().out)["signature_status"]

    assert add("1", keys.ca_cert) == "verified"
    assert main(["registry", "--registry", registry_url, "add", str(model_with_datasets), "--name", "rel",
                 "--version", "2", "--ca", str(other.ca_cert)]) == 0
    warning = capsys.readouterr().err
    assert "recorded as invalid: " in warning and "was not issued by a trusted CA" in warning
    assert add("3", other.ca_cert) == "invalid"
