"""The ``signing:`` section of ``mcp-config.yaml``: the operator's signing key and certificate
files and the timestamp authority, used by ``mcp2026 sign`` and ``mcp2026 bundle create``
(docs/compliance.md). Relative paths resolve against the config file's folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


from mcp.base.errors import ConfigError
from mcp.base.sections import StrictSection


class SigningSection(StrictSection):
    key_file: str | None = None  # PEM private key (EC P-256), unencrypted, readable by the signer only
    cert_file: str | None = None  # PEM certificate of that key
    chain_file: str | None = None  # PEM intermediates between the certificate and the root, if any
    tsa_url: str | None = None  # an RFC 3161 timestamp authority (HTTP POST application/timestamp-query)


@dataclass(frozen=True)
class SigningConfig:
    """Where the production signing identity lives; all None: the evaluation keys of
    ``mcp2026 keys init``."""

    key_file: Path | None = None
    cert_file: Path | None = None
    chain_file: Path | None = None
    tsa_url: str | None = None


def resolve_signing(section: SigningSection, base_dir: Path, source: str) -> SigningConfig:
    if (section.key_file is None) != (section.cert_file is None):
        raise ConfigError(f"{source}: signing.key_file and signing.cert_file go together; give both or neither")
    if section.tsa_url is not None and not section.tsa_url.startswith(("http://", "https://")):
        raise ConfigError(f"{source}: signing.tsa_url: must be an http:// or https:// URL (got {section.tsa_url!r})")

    def path(value: str | None) -> Path | None:
        return (base_dir / value).resolve() if value else None

    return SigningConfig(path(section.key_file), path(section.cert_file), path(section.chain_file), section.tsa_url)
