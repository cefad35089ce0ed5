"""The Session config of an in-process bench (an optional mcp-config.yaml plus ``--policy``), and its SLO targets."""

from __future__ import annotations

from pathlib import Path

import yaml

from mcp.base.errors import ConfigError
from mcp.config.runtime import RuntimeConfig, config_from_dict
from mcp.ops.loadgen.mix import SLOTable


def session_config(path: str | Path | None, policy: str | None) -> RuntimeConfig:
    """The config file's settings (or the defaults) with ``scheduler.policy`` set to ``policy``."""
    data, base_dir, source = {}, Path.cwd(), "--policy"
    if path is not None:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"--config {path}: cannot be read as YAML ({exc})") from None
        base_dir, source = path.parent.resolve(), str(path)
    if policy is not None:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: the top level must be a mapping")
        scheduler = data.setdefault("scheduler", {})
        if not isinstance(scheduler, dict):
            raise ConfigError(f"{source}: scheduler must be a mapping to set --policy in it")
        scheduler["policy"] = policy
    try:
        return config_from_dict(data, base_dir=base_dir, source=source)
    except ConfigError as exc:
        if policy is not None and "scheduler" in str(exc):
            raise ConfigError(f"--policy {policy}: this build's config has no scheduler.policy ({exc}); "
                              "it needs the engine loop with the SLO scheduler") from None
        raise


def session_slo_table(config: RuntimeConfig) -> SLOTable | None:
    """The SLO targets the session's scheduler works to; None on a build without ``scheduler.slo_targets``."""
    targets = getattr(getattr(config, "scheduler", None), "slo_targets", None)
    if targets is None:
        return None
    return SLOTable(tuple((slo_class.name.lower(), target) for slo_class, target in sorted(targets.items())))
