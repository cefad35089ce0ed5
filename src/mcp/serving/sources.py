"""Where an admin load (``POST /admin/models``, gRPC ``LoadModel``) may take a model file from.

A model source an admin names is a path the server opens with its own rights. Without a
limit, an admin key reads any file the server's user can (and learns from the error whether it
exists). ``serving.admin_models.dirs`` lists the folders allowed (default: ``runtime.model_dir``,
the model cache and the folders of the models in ``serving.models``); a source must resolve,
symlinks followed, to a file inside one of them. ``allow_any_path: true`` lifts the limit.
Models in the config file itself are the operator's choice and are never limited.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.base.errors import InvalidRequestError, MCPError
from mcp.compiler import catalog
from mcp.config.model_path import resolve_model_path
from mcp.config.runtime import RuntimeConfig
from mcp.serving.errors import PermissionDeniedError


def check_admin_source(config: RuntimeConfig, source: str) -> None:
    """Raise ``PermissionDeniedError`` unless ``source`` resolves inside an allowed folder.

    A path is refused before the filesystem is asked about it (a file outside gives the same
    answer whether or not it exists); what it resolves to (symlinks followed) is checked again.
    """
    if "\x00" in source:
        raise InvalidRequestError("model source must not contain a NUL character")
    if config.serving.admin_any_path:
        return
    roots = allowed_dirs(config)
    given = Path(source).expanduser()
    if _looks_like_path(source):
        candidates = [given] if given.is_absolute() else [config.model_dir / given, Path.cwd() / given]
        if not any(_inside(Path(os.path.normpath(c)), roots) for c in candidates):
            raise _refused(source, roots)
    resolved = resolve_model_path(config, source)
    if not _inside(resolved.resolve(), [root.resolve() for root in roots]):
        raise _refused(source, roots)


def allowed_dirs(config: RuntimeConfig) -> list[Path]:
    """The folders admin loads may read, absolute."""
    if config.serving.admin_model_dirs is not None:
        return [Path(folder) for folder in config.serving.admin_model_dirs]
    folders = [config.model_dir, catalog.compiled_path("x", config.cache_dir).parent]
    for served in config.serving.models:
        try:
            folders.append(resolve_model_path(config, served.source, pull=False).parent)
        except MCPError:
            continue  # not pulled yet, or gone: it adds no folder
    return [Path(os.path.abspath(folder)) for folder in dict.fromkeys(folders)]


def _looks_like_path(source: str) -> bool:
    return os.sep in source or (os.altsep or os.sep) in source or source.endswith(".mcp") or source.startswith("~")


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _refused(source: str, roots: list[Path]) -> PermissionDeniedError:
    shown = source if len(source) <= 200 else source[:200] + "..."
    return PermissionDeniedError(
        f"model source {shown!r} is outside the folders admin loads may read "
        f"({', '.join(str(root) for root in roots)}); put the file in one of them, or set "
        "serving.admin_models.dirs (or allow_any_path) in the server's config"
    )
