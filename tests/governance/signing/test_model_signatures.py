"""``sign`` / ``verify-model``: a detached CMS signature over the model's sha256 that our
verifier and the real ``openssl cms -verify`` both accept, and what each refusal says."""

from __future__ import annotations

import subprocess

import pytest

from mcp.base.errors import ModelSignatureError
from mcp.commands.cli import main
from mcp.governance.signing.keys import init_keys, issue_certificate, load_certificates, read_identity
from mcp.governance.signing.models import sign_model, verify_model
from mcp.modelfile.hashing import file_sha256


def test_sign_and_verify_model_on_the_command_line(pki, tiny_copy, capsys):
    files, _ = pki
    assert main(["sign", str(tiny_copy), "--key", str(files.signing_key), "--cert", str(files.signing_cert)]) == 0
    assert tiny_copy.with_name("tiny.mcp.sig").is_file()
    assert main(["verify-model", str(tiny_copy), "--ca", str(files.ca_cert)]) == 0
    assert "signature ok, signed by CN=MCP 2026 model signing" in capsys.readouterr().out


def test_openssl_accepts_the_model_signature(pki, tiny_copy, tmp_path, openssl):
    files, identity = pki
    signature = sign_model(tiny_copy, identity)
    digest = tmp_path / "digest"
    digest.write_text(file_sha256(tiny_copy))
    checked = subprocess.run([openssl, "cms", "-verify", "-binary", "-inform", "DER", "-in", str(signature),
                              "-content", str(digest), "-CAfile", str(files.ca_cert), "-purpose", "any",
                              "-out", "/dev/null"], capture_output=True, text=True)
    assert checked.returncode == 0 and "Verification successful" in checked.stderr, checked.stderr


def test_a_changed_model_is_refused(pki, tiny_copy):
    files, identity = pki
    sign_model(tiny_copy, identity)
    with tiny_copy.open("r+b") as handle:
        handle.seek(-1, 2)
        last = handle.read(1)
        handle.seek(-1, 2)
        handle.write(bytes([last[0] ^ 1]))
    with pytest.raises(ModelSignatureError, match="tiny.mcp.sig is refused: .*content changed after signing"):
        verify_model(tiny_copy, load_certificates(files.ca_cert))


def test_unsigned_wrong_ca_and_intermediates(pki, tiny_copy, tmp_path, capsys):
    files, identity = pki
    with pytest.raises(ModelSignatureError, match="is not signed: .*tiny.mcp.sig does not exist"):
        verify_model(tiny_copy, load_certificates(files.ca_cert))
    sign_model(tiny_copy, identity)
    other = init_keys(tmp_path / "other")
    assert main(["verify-model", str(tiny_copy), "--ca", str(other.ca_cert)]) == 2
    assert "was not issued by a trusted CA" in capsys.readouterr().err
    # a signer under an intermediate CA: the chain travels in the signature
    intermediate = issue_certificate("MCP 2026 intermediate", read_identity(files), purpose="ca")
    leaf = issue_certificate("MCP 2026 release signer", intermediate)
    sign_model(tiny_copy, leaf)
    info = verify_model(tiny_copy, load_certificates(files.ca_cert))
    assert [c.subject.rfc4514_string().split(",")[0] for c in info.path] == [
        "CN=MCP 2026 release signer", "CN=MCP 2026 intermediate", "CN=MCP 2026 evaluation CA"]


def test_a_signature_file_of_garbage_is_refused(pki, tiny_copy):
    files, _ = pki
    tiny_copy.with_name("tiny.mcp.sig").write_bytes(b"not a signature")
    with pytest.raises(ModelSignatureError, match="is not a DER CMS SignedData"):
        verify_model(tiny_copy, load_certificates(files.ca_cert))


def test_default_keys_and_the_configured_signing_section(tiny_copy, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    assert main(["sign", str(tiny_copy)]) == 2
    assert "run `mcp2026 keys init`" in capsys.readouterr().err
    assert main(["keys", "init"]) == 0
    assert main(["sign", str(tiny_copy)]) == 0 and main(["verify-model", str(tiny_copy)]) == 0
    operator = init_keys(tmp_path / "operator")
    config = tmp_path / "mcp-config.yaml"
    config.write_text("signing:\n  key_file: operator/signing.key\n  cert_file: operator/signing.pem\n")
    assert main(["sign", str(tiny_copy), "--config", str(config)]) == 0
    assert main(["verify-model", str(tiny_copy)]) == 2  # now signed by the operator's CA, not the default one
    assert main(["verify-model", str(tiny_copy), "--ca", str(operator.ca_cert)]) == 0
    assert main(["sign", str(tiny_copy), "--key", str(operator.signing_key)]) == 2
    assert "--key and --cert go together" in capsys.readouterr().err
