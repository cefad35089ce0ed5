"""A Triton model repository: ``<model>/config.pbtxt`` and numbered version folders.

PATH may be the model's folder or a repository holding exactly one model. The newest
version folder is the artifact; an ``model.onnx`` in it is read for parameters and
quantization. Parameters ``license``, ``architecture``, ``context_length`` and
``quantization`` in ``config.pbtxt`` (``parameters { key: ... value { string_value: ... } }``)
are used where present.
"""

from __future__ import annotations

from pathlib import Path

from mcp.base.errors import ModelFormatError
from mcp.compiler.hf_source import folder_sha256
from mcp.gateway.registry.artifacts.common import file_uri, tree_size
from mcp.gateway.registry.artifacts.pbtxt import Message, parse_pbtxt
from mcp.gateway.registry.records import ArtifactMetadata

CONFIG = "config.pbtxt"


def is_triton(path: Path) -> bool:
    return (path / CONFIG).is_file() or any((child / CONFIG).is_file() for child in _children(path))


def read_triton(path: Path) -> ArtifactMetadata:
    folder = _model_folder(path)
    config = _read_config(folder)
    version = _newest_version(folder)
    parameters = _parameters(config)
    onnx_summary = _onnx_summary(version)
    context = parameters.get("context_length") or parameters.get("max_sequence_length")
    platform = _first(config, "platform") or _first(config, "backend")
    return ArtifactMetadata(
        uri=file_uri(folder), format="triton", sha256=folder_sha256(folder), size_bytes=tree_size(folder),
        name=_first(config, "name") or folder.name,
        architecture=parameters.get("architecture") or platform,
        parameter_count=onnx_summary.get("parameter_count"),
        quantization=parameters.get("quantization") or onnx_summary.get("quantization"),
        context_length=int(context) if context and str(context).isdigit() else None,
        license=parameters.get("license"),
        lineage={"platform": platform, "max_batch_size": _first(config, "max_batch_size") or 0,
                 "model_version": version.name, "inputs": _tensors(config, "input"),
                 "outputs": _tensors(config, "output")},
    )


def _children(path: Path) -> list[Path]:
    return sorted(child for child in path.iterdir() if child.is_dir()) if path.is_dir() else []


def _model_folder(path: Path) -> Path:
    if (path / CONFIG).is_file():
        return path
    models = [child for child in _children(path) if (child / CONFIG).is_file()]
    if len(models) != 1:
        names = ", ".join(m.name for m in models)
        raise ModelFormatError(f"{path}: a Triton repository with {len(models)} models ({names}); "
                               "register one model at a time: pass its folder")
    return models[0]


def _read_config(folder: Path) -> Message:
    path = folder / CONFIG
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFormatError(f"{path}: cannot be read ({exc})") from None
    config = parse_pbtxt(text, source=str(path))
    if not (_first(config, "platform") or _first(config, "backend")):
        raise ModelFormatError(f"{path}: names neither a platform nor a backend; not a Triton model config")
    return config


def _newest_version(folder: Path) -> Path:
    versions = [child for child in _children(folder) if child.name.isdigit() and any(child.iterdir())]
    if not versions:
        raise ModelFormatError(f"{folder}: no version folder (a non-empty numbered folder such as 1/); "
                               "Triton serves nothing from this model")
    return max(versions, key=lambda child: int(child.name))


def _onnx_summary(version: Path) -> dict:
    model_file = version / "model.onnx"
    if not model_file.is_file():
        return {}
    from mcp.gateway.registry.artifacts.onnx_file import load_onnx_model, onnx_summary

    return onnx_summary(load_onnx_model(model_file))


def _parameters(config: Message) -> dict[str, str]:
    found = {}
    for entry in config.get("parameters", []):
        key, value = _first(entry, "key"), _first(entry, "value")
        if isinstance(key, str) and isinstance(value, dict):
            found[key] = _first(value, "string_value")
    return found


def _tensors(config: Message, kind: str) -> list[dict]:
    return [{"name": _first(t, "name"), "data_type": _first(t, "data_type"), "dims": t.get("dims", [])}
            for t in config.get(kind, []) if isinstance(t, dict)]


def _first(message: Message, key: str):
    values = message.get(key) or [None]
    return values[0]
