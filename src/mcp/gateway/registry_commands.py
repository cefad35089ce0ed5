"""``mcp2026 registry migrate|add|list|show|promote|archive|log``; heavy imports happen
only when a command runs."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

STAGES = ("staging", "canary", "production", "archived")


def add_registry_commands(commands: argparse._SubParsersAction) -> None:
    registry = commands.add_parser("registry", help="the model registry (docs/governance.md)")
    registry.add_argument("--registry", dest="registry_url", metavar="URL",
                          help="sqlite:///PATH or postgresql+psycopg://USER@HOST/DB "
                               "(default: $MCP_REGISTRY_URL, else $MCP_HOME/registry.db)")
    registry.add_argument("--actor", help="who is making the change (default: user@host)")
    actions = registry.add_subparsers(title="actions", metavar="ACTION")
    actions.add_parser("migrate", help="bring the database to the newest schema").set_defaults(handler=_migrate)
    add = actions.add_parser("add", help="register a .mcp, .gguf, .onnx file, HF folder or Triton model")
    add.add_argument("path", type=Path)
    add.add_argument("--name", help="model name (default: from the artifact)")
    add.add_argument("--version", dest="model_version", default="1", help="version label (default 1)")
    add.add_argument("--stage", choices=STAGES, default="staging")
    add.add_argument("--ca", type=Path, help="check a .mcp's signature against these CAs: signature_status "
                                             "verified or invalid (without: signed when a .sig lies beside it)")
    add.set_defaults(handler=_add)
    listing = actions.add_parser("list", help="every model version and its stage")
    listing.add_argument("name", nargs="?")
    listing.set_defaults(handler=_list)
    show = actions.add_parser("show", help="all recorded metadata of one version")
    show.add_argument("model_id", help="NAME:VERSION")
    show.set_defaults(handler=_show)
    promote = actions.add_parser("promote", help="move a version to another stage")
    promote.add_argument("model_id", help="NAME:VERSION")
    promote.add_argument("stage", choices=STAGES)
    promote.set_defaults(handler=_promote)
    archive = actions.add_parser("archive", help="move a version to archived")
    archive.add_argument("model_id", help="NAME:VERSION")
    archive.set_defaults(handler=_archive)
    log = actions.add_parser("log", help="the change log (who changed what, when)")
    log.add_argument("subject", nargs="?", help="a model name or NAME:VERSION")
    log.add_argument("--limit", type=int, help="only the newest N entries")
    log.set_defaults(handler=_log)


def _open(args: argparse.Namespace, auto_migrate: bool = True):
    from mcp.gateway.registry.registry import Registry

    return Registry.open(args.registry_url, actor=args.actor, auto_migrate=auto_migrate)


def _split_id(model_id: str) -> tuple[str, str]:
    from mcp.gateway.errors import UnknownVersionError

    name, colon, version = model_id.rpartition(":")
    if not (colon and name and version):
        raise UnknownVersionError(f"{model_id!r}: give a model version as NAME:VERSION")
    return name, version


def _migrate(args: argparse.Namespace) -> int:
    from mcp.gateway.registry import migrate

    with _open(args, auto_migrate=False) as registry:
        before = migrate.current_revision(registry.engine)
        after = migrate.upgrade(registry.engine)
        print(f"registry {registry.engine.url.render_as_string(hide_password=True)}: "
              f"schema {before or 'empty'} -> {after}")
    return 0


def _add(args: argparse.Namespace) -> int:
    from mcp.gateway.registry.artifacts import read_artifact
    from mcp.gateway.registry.stages import parse_stage

    artifact = read_artifact(args.path)  # before touching the database: a bad file leaves no row
    if args.ca is not None:
        artifact = _checked_signature(args.path, artifact, args.ca)
    with _open(args) as registry:
        version = registry.register(artifact, args.name, args.model_version, parse_stage(args.stage))
    print(f"registered {version.model_id} ({version.format}, {version.stage.value}, sha256 {version.sha256[:12]})")
    return 0


def _checked_signature(path: Path, artifact, ca: Path):
    """The artifact with signature_status "verified" or "invalid" (saying why), or "unsigned"."""
    import dataclasses
    import sys

    from mcp.gateway.errors import RegistryError
    from mcp.governance.signing.models import signature_path, trusted_certificates, verify_model
    from mcp.base.errors import ModelSignatureError

    if artifact.format != "mcp":
        raise RegistryError(f"--ca checks signatures of .mcp files; {path} is {artifact.format}")
    if not signature_path(path).is_file():
        return dataclasses.replace(artifact, signature_status="unsigned")
    try:
        verify_model(path, trusted_certificates(ca))
    except ModelSignatureError as exc:
        print(f"mcp2026: warning: recorded as invalid: {exc}", file=sys.stderr)
        return dataclasses.replace(artifact, signature_status="invalid")
    return dataclasses.replace(artifact, signature_status="verified")


def _list(args: argparse.Namespace) -> int:
    with _open(args) as registry:
        versions = registry.versions(args.name)
    print(f"{'MODEL:VERSION':32} {'STAGE':10} {'FORMAT':7} {'ARCH':22} {'PARAMS':>13} {'QUANT':10} SHA256")
    for v in versions:
        params = f"{v.parameter_count:,}" if v.parameter_count is not None else "-"
        print(f"{v.model_id:32} {v.stage.value:10} {v.format:7} {str(v.architecture or '-')[:22]:22} "
              f"{params:>13} {str(v.quantization or '-'):10} {v.sha256[:12]}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with _open(args) as registry:
        version = registry.get(*_split_id(args.model_id))
        deployments = registry.deployments(version.name, version.version)
    record = asdict(version) | {"stage": version.stage.value, "created_at": version.created_at.isoformat(),
                                "deployments": [asdict(d) | {"updated_at": d.updated_at.isoformat()}
                                                for d in deployments]}
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


def _promote(args: argparse.Namespace) -> int:
    from mcp.gateway.registry.stages import parse_stage

    with _open(args) as registry:
        version = registry.promote(*_split_id(args.model_id), parse_stage(args.stage))
    print(f"{version.model_id} is now {version.stage.value}")
    return 0


def _archive(args: argparse.Namespace) -> int:
    args.stage = "archived"
    return _promote(args)


def _log(args: argparse.Namespace) -> int:
    with _open(args) as registry:
        changes = registry.changes(args.subject, args.limit)
    for change in changes:
        before = (change.before or {}).get("stage")
        after = (change.after or {}).get("stage")
        moved = f" {before} -> {after}" if before and after else ""
        print(f"{change.id:6} {change.at.isoformat(timespec='seconds')} {change.actor:24} "
              f"{change.action:14} {change.subject}{moved}")
    return 0
