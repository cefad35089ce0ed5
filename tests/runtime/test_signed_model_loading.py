"""``runtime.require_signed_models``: a Session loads only models whose ``.sig`` verifies
against ``runtime.trusted_ca``; the ``signing:`` section names the operator's key files."""

from __future__ import annotations

import pytest

from mcp.base.errors import ConfigError, ModelSignatureError
from mcp.config.runtime import config_from_dict, load_config
from mcp.governance.signing.keys import init_keys, load_identity
from mcp.governance.signing.models import sign_model
from mcp.runtime.session import Session
from mcp.serving.errors import describe


def _session(tmp_path) -> Session:
    path = tmp_path / "mcp-config.yaml"
    path.write_text("runtime:\n  device: cpu\n  require_signed_models: true\n  trusted_ca: keys/ca.pem\n")
    return Session(load_config(path))


def test_an_unsigned_model_is_refused_and_a_signed_one_loads(tmp_path, pki, tiny_copy):
    session = _session(tmp_path)
    assert session.config.trusted_ca == pki[0].ca_cert
    with pytest.raises(ModelSignatureError, match="tiny.mcp is not signed: .*sign it with `mcp2026 sign`"):
        session.load_model(tiny_copy)
    sign_model(tiny_copy, pki[1])
    with session:
        loaded = session.load_model(tiny_copy)
        assert loaded.infer("a b", max_tokens=2, temperature=0.0, ignore_eos=True).usage.completion_tokens == 2


def test_a_model_signed_under_another_ca_is_refused(tmp_path, pki, tiny_copy):
    other = init_keys(tmp_path / "other")
    sign_model(tiny_copy, load_identity(other.signing_key, other.signing_cert))
    with pytest.raises(ModelSignatureError, match="was not issued by a trusted CA"):
        _session(tmp_path).load_model(tiny_copy)


def test_the_refusal_is_a_403_on_the_wire():
    wire = describe(ModelSignatureError("m.mcp is not signed"))
    assert (wire.status, wire.code, wire.grpc) == (403, "model_signature_refused", "PERMISSION_DENIED")


def test_config_checks(tmp_path):
    with pytest.raises(ConfigError, match="runtime.require_signed_models: needs runtime.trusted_ca"):
        config_from_dict({"runtime": {"require_signed_models": True}})
    with pytest.raises(ConfigError, match="signing.key_file and signing.cert_file go together"):
        config_from_dict({"signing": {"key_file": "k.pem"}})
    with pytest.raises(ConfigError, match="signing.tsa_url: must be an http"):
        config_from_dict({"signing": {"tsa_url": "ftp://tsa"}})
    config = config_from_dict({"signing": {"key_file": "k.pem", "cert_file": "c.pem", "tsa_url": "http://t/"}},
                              base_dir=tmp_path)
    assert config.signing.key_file == tmp_path / "k.pem" and config.signing.tsa_url == "http://t/"
    assert config_from_dict({}).require_signed_models is False
