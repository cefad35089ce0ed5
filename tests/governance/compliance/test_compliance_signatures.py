"""The report's model_signing and model_lineage evidence with signatures verified against
runtime.trusted_ca (governance.signing) and datasets declared in the model's lineage."""

from __future__ import annotations

import dataclasses
import shutil

from mcp.config.runtime import config_from_dict
from mcp.governance.compliance.context import EvidenceContext, ReportPeriod
from mcp.governance.compliance.queries.models import data_lineage, model_lineage, model_signatures
from mcp.governance.compliance.status import Status
from mcp.governance.signing.keys import init_keys, load_identity
from mcp.governance.signing.models import sign_model
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import Dataset
from mcp.modelfile.writer import write_model


def _context(model, runtime: dict) -> EvidenceContext:
    config = config_from_dict({"runtime": runtime, "serving": {"models": [{"name": "tiny", "source": str(model)}]}})
    return EvidenceContext(config, "mcp-config.yaml", ReportPeriod.parse())


def test_signatures_verified_against_the_trusted_ca(tiny_mcp, tmp_path):
    model = shutil.copy(tiny_mcp, tmp_path / "tiny.mcp")
    keys, other = init_keys(tmp_path / "keys"), init_keys(tmp_path / "other")
    required = {"require_signed_models": True, "trusted_ca": str(keys.ca_cert)}
    unsigned = model_signatures(_context(model, required))
    assert unsigned.status is Status.NOT_MET and "tiny:1: no signature" in unsigned.evidence[-1]
    sign_model(model, load_identity(keys.signing_key, keys.signing_cert))
    met = model_signatures(_context(model, required))
    assert met.status is Status.MET
    assert met.evidence[0] == "tiny:1: signature tiny.mcp.sig verified, signed by CN=MCP 2026 model signing,O=MCP 2026"
    not_required = model_signatures(_context(model, {"trusted_ca": str(keys.ca_cert)}))
    assert not_required.status is Status.PARTLY and "require_signed_models is off" in not_required.evidence[-1]
    refused = model_signatures(_context(model, {"require_signed_models": True, "trusted_ca": str(other.ca_cert)}))
    assert refused.status is Status.NOT_MET and "signature refused: " in refused.evidence[0]
    unverified = model_signatures(_context(model, {}))
    assert unverified.status is Status.PARTLY and "present, not verified (set runtime.trusted_ca" in unverified.evidence[0]


def test_lineage_facts_name_the_declared_datasets(tiny_mcp, tmp_path):
    model = tmp_path / "tiny.mcp"
    with open_model(tiny_mcp) as source:
        lineage = dataclasses.replace(source.header.lineage, datasets=(Dataset("smoltalk"), Dataset("wiki")))
        header = dataclasses.replace(source.header, lineage=lineage)
        write_model(model, header, {spec.name: source.tensor(spec.name) for spec in header.tensors})
    found = model_lineage(_context(model, {}))
    assert found.status is Status.MET and found.evidence[0].endswith("datasets: smoltalk, wiki")
    assert model_lineage(_context(tiny_mcp, {})).evidence[0].endswith("datasets: none declared")


def test_data_lineage_needs_a_license_and_hash_for_every_dataset(tiny_mcp, tmp_path):
    digest = "ab" * 32
    cases = {
        "documented": ((Dataset("smoltalk", license="apache-2.0", sha256=digest),), Status.MET),
        "no-hash": ((Dataset("smoltalk", license="apache-2.0"), Dataset("wiki", sha256=digest)), Status.PARTLY),
    }
    for name, (datasets, expected) in cases.items():
        model = tmp_path / f"{name}.mcp"
        with open_model(tiny_mcp) as source:
            lineage = dataclasses.replace(source.header.lineage, datasets=datasets)
            header = dataclasses.replace(source.header, lineage=lineage)
            write_model(model, header, {spec.name: source.tensor(spec.name) for spec in header.tensors})
        found = data_lineage(_context(model, {}))
        assert found.status is expected, (name, found)
    assert found.evidence == (f"tiny:1: no-hash.mcp declares 2 dataset(s): smoltalk (apache-2.0), wiki (no license); "
                              "smoltalk has no sha256; wiki has no license",)
    none = data_lineage(_context(tiny_mcp, {}))
    assert none.status is Status.NOT_MET
    assert none.evidence[0].endswith("declares no dataset (declare them with mcp2026 compile --lineage)")
