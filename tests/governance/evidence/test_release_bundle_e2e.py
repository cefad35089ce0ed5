"""A release of the default model, end to end on the command line: keys, signature, a
timestamped evidence bundle that our verifier and the real openssl accept, and a Session
that loads the signed model under require_signed_models and refuses it unsigned."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile

import pytest

from mcp.base.errors import ModelSignatureError
from mcp.commands.cli import main
from mcp.config.runtime import load_config
from mcp.runtime.session import Session

pytestmark = pytest.mark.slow


@pytest.fixture
def release(smollm2_mcp, tmp_path):
    """The default model under a folder of the test's own (a hard link: no copy of its bytes)."""
    path = tmp_path / "release" / smollm2_mcp.name
    path.parent.mkdir()
    try:
        os.link(smollm2_mcp, path)
    except OSError:
        shutil.copy(smollm2_mcp, path)
    return path


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True)


def test_release_of_the_default_model(release, tsa, pki, tmp_path, capsys, openssl):
    files, _ = pki
    identity = ["--key", str(files.signing_key), "--cert", str(files.signing_cert)]
    assert main(["sign", str(release), *identity]) == 0
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"framework": "eu-ai-act", "clauses": [{"id": "eu-ai-act-art-11", "status": "covered"}]}))
    bundle = tmp_path / "smollm2.ceb"
    assert main(["bundle", "create", str(release), "--out", str(bundle), "--report", str(report),
                 "--tsa-url", tsa.url, *identity]) == 0
    assert main(["bundle", "verify", str(bundle), "--ca", str(files.ca_cert)]) == 0
    assert "model smollm2-135m-instruct" in capsys.readouterr().out

    extracted = tmp_path / "extracted"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(extracted)
    cms = _run(openssl, "cms", "-verify", "-binary", "-inform", "DER", "-in", str(extracted / "manifest.json.p7s"),
                   "-content", str(extracted / "manifest.json"), "-CAfile", str(files.ca_cert), "-purpose", "any",
                   "-out", os.devnull)
    assert cms.returncode == 0 and "Verification successful" in cms.stderr, cms.stderr
    ts = _run(openssl, "ts", "-verify", "-data", str(extracted / "manifest.json.p7s"), "-in",
                  str(extracted / "manifest.json.p7s.tsr"), "-CAfile", str(files.ca_cert))
    assert ts.returncode == 0 and "Verification: OK" in ts.stdout, ts.stdout + ts.stderr
    manifest = json.loads((extracted / "manifest.json").read_text())
    assert manifest["model_lineage"]["source_name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert manifest["compliance"]["clauses_covered"] == ["eu-ai-act-art-11"]

    config = tmp_path / "mcp-config.yaml"
    config.write_text(f"runtime:\n  device: cpu\n  require_signed_models: true\n  trusted_ca: {files.ca_cert}\n")
    with Session(load_config(config)) as session:
        model = session.load_model(release)
        assert model.infer("Hi", max_tokens=2, temperature=0.0).usage.completion_tokens >= 1
        session.unload_model(model)
        release.with_name(release.name + ".sig").unlink()
        with pytest.raises(ModelSignatureError, match="is not signed"):
            session.load_model(release)
