"""``mcp2026 keys init``, ``mcp2026 sign`` and ``mcp2026 verify-model``; heavy imports happen
only when a command runs. Which key signs: ``--key``/``--cert`` (``--chain``), else the
``signing:`` section of ``--config``, else the evaluation keys of ``keys init``."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_signing_commands(commands: argparse._SubParsersAction) -> None:
    keys = commands.add_parser("keys", help="signing keys: keys init (docs/compliance.md)")
    actions = keys.add_subparsers(title="actions", metavar="ACTION")
    init = actions.add_parser("init", help="create an evaluation CA and a signing key and certificate")
    init.add_argument("--dir", type=Path, help="where (default: $MCP_HOME/keys)")
    init.add_argument("--days", type=int, default=365, help="validity of the certificates (default 365)")
    init.add_argument("--force", action="store_true", help="replace keys already there")
    init.set_defaults(handler=_keys_init)

    sign = commands.add_parser("sign", help="write MODEL.mcp.sig, a detached CMS signature of a model")
    sign.add_argument("model", type=Path)
    sign.add_argument("--out", type=Path, help="signature file (default: MODEL.mcp.sig)")
    add_identity_arguments(sign)
    sign.set_defaults(handler=_sign)

    verify = commands.add_parser("verify-model", help="check a model's signature against a trusted CA")
    verify.add_argument("model", type=Path)
    verify.add_argument("--ca", type=Path, help="PEM file of the trusted CAs (default: the evaluation CA)")
    verify.add_argument("--signature", type=Path, help="signature file (default: MODEL.mcp.sig)")
    verify.set_defaults(handler=_verify_model)


def add_identity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", type=Path, help="PEM private key (default: signing.key_file, else keys init's)")
    parser.add_argument("--cert", type=Path, help="PEM certificate of --key")
    parser.add_argument("--chain", type=Path, help="PEM intermediates between --cert and the root")
    parser.add_argument("--config", type=Path, help="an mcp-config.yaml whose signing: section names the files")


def resolve_identity(args: argparse.Namespace):
    """The signing identity the flags, the config or the evaluation keys name."""
    from mcp.governance.errors import SigningError
    from mcp.governance.signing.keys import default_identity, load_identity

    if (args.key is None) != (args.cert is None):
        raise SigningError("--key and --cert go together; give both, or neither to use the configured keys")
    if args.key is not None:
        return load_identity(args.key, args.cert, args.chain)
    signing = signing_config(args)
    if signing.key_file is not None:
        return load_identity(signing.key_file, signing.cert_file, signing.chain_file)
    return default_identity()


def signing_config(args: argparse.Namespace):
    from mcp.config.runtime import load_config
    from mcp.config.signing import SigningConfig

    return load_config(args.config).signing if args.config else SigningConfig()


def trusted_ca_file(path: Path | None) -> Path:
    from mcp.governance.signing.keys import KeyFiles, default_keys_dir

    return path if path is not None else KeyFiles(default_keys_dir()).ca_cert


def _keys_init(args: argparse.Namespace) -> int:
    from mcp.governance.signing.keys import init_keys

    files = init_keys(args.dir, days=args.days, force=args.force)
    print(f"evaluation CA     {files.ca_cert}\nsigning key       {files.signing_key} (mode 0600)\n"
          f"signing cert      {files.signing_cert}\nfor evaluation only: in production, sign with a key and "
          "certificate from your PKI (signing: in mcp-config.yaml)")
    return 0


def _sign(args: argparse.Namespace) -> int:
    from mcp.governance.signing.models import sign_model

    identity = resolve_identity(args)
    written = sign_model(args.model, identity, args.out)
    print(f"signed {args.model} -> {written} ({identity.certificate.subject.rfc4514_string()})")
    return 0


def _verify_model(args: argparse.Namespace) -> int:
    from mcp.governance.signing.models import trusted_certificates, verify_model

    info = verify_model(args.model, trusted_certificates(trusted_ca_file(args.ca)), args.signature)
    print(f"{args.model}: signature ok, signed by {info.signer_name} "
          f"(path: {' <- '.join(c.subject.rfc4514_string() for c in info.path)})")
    return 0
