"""A Hugging Face model folder: config.json, the safetensors headers (shapes, dtypes), the
model card's license; any model type, read with the modelfile's HF helpers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open

from mcp.base.errors import ModelFormatError
from mcp.compiler.hf_source import folder_sha256, read_config, readme_license, shard_files
from mcp.gateway.registry.artifacts.common import dominant, file_uri, product, tree_size
from mcp.gateway.registry.records import ArtifactMetadata

_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def read_hf_folder(folder: Path) -> ArtifactMetadata:
    config = read_config(folder)
    elements = _elements_by_dtype(shard_files(folder))
    architectures = config.get("architectures") or [config.get("model_type")]
    return ArtifactMetadata(
        uri=file_uri(folder), format="hf", sha256=folder_sha256(folder), size_bytes=tree_size(folder),
        name=folder.name, architecture=architectures[0], parameter_count=sum(elements.values()),
        quantization=_quantization(config) or dominant(elements), context_length=_context_length(config),
        license=readme_license(folder) or config.get("license"),
        lineage={k: v for k, v in (("model_type", config.get("model_type")),
                                   ("base_model", config.get("_name_or_path") or None),
                                   ("torch_dtype", config.get("torch_dtype") or config.get("dtype")),
                                   ("transformers_version", config.get("transformers_version")))
                 if v is not None},
    )


def _elements_by_dtype(shards: list[Path]) -> Counter[str]:
    elements: Counter[str] = Counter()
    for shard in shards:
        try:
            with safe_open(str(shard), framework="numpy") as handle:
                for name in handle.keys():
                    view = handle.get_slice(name)
                    elements[view.get_dtype().lower()] += product(view.get_shape())
        except SafetensorError as exc:
            raise ModelFormatError(f"{shard}: not a readable safetensors file ({exc})") from None
    return elements


def _quantization(config: dict[str, Any]) -> str | None:
    quant = config.get("quantization_config")
    if not isinstance(quant, dict):
        return None
    method = quant.get("quant_method", "quantized")
    bits = quant.get("bits") or ("4" if quant.get("load_in_4bit") else "8" if quant.get("load_in_8bit") else None)
    return f"{method}-{bits}bit" if bits else str(method)


def _context_length(config: dict[str, Any]) -> int | None:
    for key in _CONTEXT_KEYS:
        if isinstance(config.get(key), int):
            return int(config[key])
    return None
