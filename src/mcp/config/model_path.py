"""Which ``.mcp`` file a model argument names (no torch: the lean decoder's CLI uses it too)."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.base.errors import ModelNotFoundError
from mcp.compiler import catalog
from mcp.config.runtime import RuntimeConfig


def resolve_model_path(config: RuntimeConfig, model: str | os.PathLike, *, pull: bool = True) -> Path:
    """The .mcp file ``model`` names: a path (relative to ``model_dir``, then the working folder)
    or a catalog name (compiled in the cache, pulled when it is not there yet; with
    ``pull=False``, a ``ModelNotFoundError`` that says to pull it instead: pulling compiles,
    which needs torch)."""
    if not isinstance(model, (str, os.PathLike)):
        raise ModelNotFoundError(f"model must be a path or a catalog name, got {type(model).__name__}")
    path = Path(model).expanduser()
    candidates = [path] if path.is_absolute() else [config.model_dir / path, Path.cwd() / path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    home, name = config.cache_dir, catalog_name(path)
    cached = catalog.compiled_path(name, home)
    if cached.is_file():
        return cached
    if name in catalog.CATALOG:
        if not pull:
            raise ModelNotFoundError(f"{name} is not pulled yet: run `mcp2026 pull {name}` first "
                                     "(compiling it needs torch)")
        return catalog.pull(name, home)
    looked = ", ".join(str(c) for c in dict.fromkeys([*candidates, cached]))
    raise ModelNotFoundError(
        f"model {str(model)!r} not found (looked in {looked}) and it is not a catalog name "
        f"({', '.join(sorted(catalog.CATALOG))}); give the path of a .mcp file"
    )


def catalog_name(path: Path) -> str:
    """``smollm2-135m-instruct.mcp`` and ``smollm2-135m-instruct`` both name the catalog entry."""
    return path.name[: -len(".mcp")] if path.name.endswith(".mcp") else path.name
