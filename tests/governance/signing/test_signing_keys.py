"""``keys init``: an evaluation CA and a signing certificate it issued, private keys 0600."""

from __future__ import annotations

import stat

import pytest
from cryptography import x509

from mcp.commands.cli import main
from mcp.governance.errors import SigningError
from mcp.governance.signing.keys import init_keys, load_certificates, load_identity


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_init_makes_a_ca_and_a_signing_certificate_it_issued(tmp_path, capsys):
    folder = tmp_path / "keys"
    assert main(["keys", "init", "--dir", str(folder), "--days", "30"]) == 0
    assert "for evaluation only" in capsys.readouterr().out
    assert _mode(folder / "ca.key") == 0o600 and _mode(folder / "signing.key") == 0o600
    ca = load_certificates(folder / "ca.pem")[0]
    signer = load_certificates(folder / "signing.pem")[0]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert signer.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert signer.issuer == ca.subject
    signer.verify_directly_issued_by(ca)
    assert (signer.not_valid_after_utc - signer.not_valid_before_utc).days == 30
    load_identity(folder / "signing.key", folder / "signing.pem")


def test_keys_init_defaults_to_mcp_home_and_keeps_existing_keys(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    assert main(["keys", "init"]) == 0
    first = (tmp_path / "home" / "keys" / "signing.pem").read_bytes()
    assert main(["keys", "init"]) == 2
    assert "already exists; keep using it, pass --force" in capsys.readouterr().err
    assert main(["keys", "init", "--force"]) == 0
    assert (tmp_path / "home" / "keys" / "signing.pem").read_bytes() != first


def test_a_key_and_a_certificate_of_another_key_are_refused(tmp_path):
    one, two = init_keys(tmp_path / "one"), init_keys(tmp_path / "two")
    with pytest.raises(SigningError, match="is not for the key"):
        load_identity(one.signing_key, two.signing_cert)
    with pytest.raises(SigningError, match="cannot read .*missing.pem"):
        load_identity(one.signing_key, tmp_path / "missing.pem")
    with pytest.raises(SigningError, match="is not an unencrypted PEM private key"):
        load_identity(one.signing_cert, one.signing_cert)
