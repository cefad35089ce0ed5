"""The ``attestation:`` section: absent is off, ``{}`` is on with defaults, a wrong key is named."""

from __future__ import annotations

import pytest

from mcp.base.errors import ConfigError
from mcp.config.attestation import AttestationConfig, SevSnpConfig, TpmConfig
from mcp.config.runtime import load_config


def test_absent_section_is_off_and_empty_section_has_defaults(tmp_path):
    path = tmp_path / "mcp-config.yaml"
    path.write_text("version: 1\n")
    assert load_config(path).attestation is None
    path.write_text("attestation: {}\n")
    assert load_config(path).attestation == AttestationConfig(None, 23, None, None)


def test_values_and_relative_key_file(tmp_path):
    path = tmp_path / "mcp-config.yaml"
    path.write_text("attestation:\n  key_file: keys/instance.key\n  pcr: 16\n"
                    "  tpm: {tcti: 'swtpm:host=127.0.0.1,port=2321', hierarchy: owner}\n  sev_snp: {vmpl: 1}\n")
    config = load_config(path).attestation
    assert config.key_file == str(tmp_path / "keys" / "instance.key") and config.pcr == 16
    assert config.tpm == TpmConfig("swtpm:host=127.0.0.1,port=2321", "owner")
    assert config.sev_snp == SevSnpConfig("/dev/sev-guest", 1)


@pytest.mark.parametrize("text, message", [
    ("attestation: {pcr: 24}", "attestation.pcr: Input should be less than or equal to 23"),
    ("attestation: {tpm: {hierarchy: platform}}", "attestation.tpm.hierarchy"),
    ("attestation: {tmp: {}}", "attestation.tmp: unknown key"),
])
def test_bad_values_name_the_key(tmp_path, text, message):
    path = tmp_path / "mcp-config.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)
