"""Read a Hugging Face model folder (config.json, *.safetensors, tokenizer.json) as a compile source.

Tensor names are already the ``.mcp`` names and the layout is already torch ``Linear``;
each tensor keeps its dtype (f32, f16, bf16) and is read lazily through ``safe_open``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.compiler.compiler import SourceModel, SourceTensor
from mcp.compiler.hf_gemma3 import MODEL_TYPE, gemma3_architecture, gemma3_tensor, rope_parameters_of
from mcp.compiler.hf_qwen3 import MODEL_TYPES as QWEN3_MODEL_TYPES
from mcp.compiler.hf_qwen3 import qwen3_architecture
from mcp.compiler.hf_phi3 import MODEL_TYPE as PHI3, phi3_architecture, rope_factor_tensors
from mcp.compiler.hf_tokenizer import tokenizer_spec_from_hf_folder
from mcp.modelfile.hashing import file_sha256
from mcp.modelfile.spec import ArchitectureConfig, RopeScaling

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", MODEL_TYPE, *QWEN3_MODEL_TYPES, "bert", PHI3)
DTYPE_ENCODINGS = {"F32": "f32", "F16": "f16", "BF16": "bf16"}
INDEX_FILE = "model.safetensors.index.json"
_IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)  # buffers some old checkpoints saved


def load_hf_folder(folder: Path) -> SourceModel:
    """Read ``folder`` into a ``SourceModel``; tensor data is read only when written."""
    config = read_config(folder)
    shards = shard_files(folder)
    if not (folder / "tokenizer.json").is_file():
        raise ModelFormatError(
            f"{folder}: tokenizer.json is missing; save the tokenizer into the folder "
            "(transformers' tokenizer.save_pretrained)"
        )
    model_type = config.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModelError(
            f"{folder}: model_type {model_type!r} is not supported; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    tensors = _tensors(folder, shards)
    if model_type == "bert":  # the encoder family (compiler/bert_source.py)
        from mcp.compiler.bert_source import load_bert_folder

        return load_bert_folder(folder, config, tensors, folder_sha256(folder), readme_license(folder))
    architecture, recipe = _architecture(folder, config, {t.name for t in tensors})
    if model_type == MODEL_TYPE:
        tensors = [gemma3_tensor(t) for t in tensors]
    if model_type == PHI3:
        tensors += rope_factor_tensors(config)
    if (folder / "modules.json").is_file():  # a sentence-transformers decoder: it declares how it embeds
        from mcp.compiler.sentence_config import sentence_pooling

        architecture = replace(architecture, pooling=sentence_pooling(folder, architecture.max_position_embeddings))
    if architecture.tie_word_embeddings:
        tensors = [t for t in tensors if t.name != "lm_head.weight"]
    return SourceModel(
        name=folder.name,
        format="hf-safetensors",
        sha256=folder_sha256(folder),
        architecture=architecture,
        tokenizer=tokenizer_spec_from_hf_folder(folder),
        tensors=tuple(tensors),
        license=readme_license(folder),
        base_model=config.get("_name_or_path") or None,
        recipe={"qk_layout": "native", "source_architecture": model_type, **recipe},
    )


def read_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelFormatError(f"{folder}: config.json is missing; a Hugging Face model folder needs one")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ModelFormatError(f"{path}: not a JSON object")
    return config


def shard_files(folder: Path) -> list[Path]:
    index = folder / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ModelFormatError(f"{index}: not a safetensors index ({exc!r})") from None
        shards = [folder / name for name in sorted(set(weight_map.values()))]
        for shard in shards:
            if not shard.is_file():
                raise ModelFormatError(f"{folder}: {shard.name} (named in {INDEX_FILE}) is missing")
        return shards
    shards = sorted(folder.glob("*.safetensors"))
    if not shards:
        raise ModelFormatError(
            f"{folder}: no *.safetensors file; save the model with transformers' save_pretrained "
            "(safetensors, not pickle: .bin files are never loaded)"
        )
    return shards


def _tensors(folder: Path, shards: list[Path]) -> list[SourceTensor]:
    tensors: dict[str, SourceTensor] = {}
    for shard in shards:
        try:
            handle = safe_open(str(shard), framework="pt")
        except SafetensorError as exc:
            raise ModelFormatError(f"{shard}: not a readable safetensors file ({exc})") from None
        for name in handle.keys():
            if name.endswith(_IGNORED_SUFFIXES) or _encoder_skips(name):
                continue
            if name in tensors:
                raise ModelFormatError(f"{folder}: tensor {name} appears in two safetensors files")
            tensors[name] = _source_tensor(shard, handle, name)
    return list(tensors.values())


def _encoder_skips(name: str) -> bool:
    from mcp.compiler.bert_source import skipped

    return skipped(name)


def _source_tensor(shard: Path, handle, name: str) -> SourceTensor:
    view = handle.get_slice(name)
    encoding = DTYPE_ENCODINGS.get(view.get_dtype())
    if encoding is None:
        raise UnsupportedModelError(
            f"{shard}: tensor {name} has dtype {view.get_dtype()}; supported: {', '.join(DTYPE_ENCODINGS)}"
        )
    return SourceTensor(name, encoding, tuple(view.get_shape()), lambda: handle.get_tensor(name))


def _architecture(
    folder: Path, config: dict[str, Any], names: set[str]
) -> tuple[ArchitectureConfig, dict[str, str]]:
    if config.get("hidden_act", "silu") != "silu" and config.get("model_type") != MODEL_TYPE:
        raise UnsupportedModelError(
            f"{folder}: hidden_act {config['hidden_act']!r} is not supported (silu is)"
        )
    try:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        max_positions, recipe = _context_length(config)
        fields = dict(
            architecture="llama",
            variant=config["model_type"],
            vocab_size=int(config["vocab_size"]),
            hidden_size=hidden,
            intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_attention_heads=heads,
            num_kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            max_position_embeddings=max_positions,
            rms_norm_eps=float(config["rms_norm_eps"]),
            rope_theta=_rope_theta(config),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", "lm_head.weight" not in names)),
            attention_bias=config["model_type"] == "qwen2" or bool(config.get("attention_bias", False)),
            rope_scaling=None if config["model_type"] == PHI3 else _rope_scaling(folder, config),
        )
        if config["model_type"] == MODEL_TYPE:
            return gemma3_architecture(folder, config, fields, fields["rope_scaling"]), recipe
        if config["model_type"] in QWEN3_MODEL_TYPES:
            return qwen3_architecture(folder, config, fields), recipe
        if config["model_type"] == PHI3:
            return phi3_architecture(folder, config, fields), recipe
        arch = ArchitectureConfig(**fields, sliding_window=_sliding_window(config))
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"{folder}/config.json: missing or bad value {exc!r}") from None
    return arch, recipe


def _rope_parameters(config: dict[str, Any]) -> dict[str, Any]:
    """transformers < 5 writes ``rope_theta`` + ``rope_scaling``; 5 writes ``rope_parameters``."""
    if config.get("model_type") == MODEL_TYPE:
        return rope_parameters_of(config)
    return dict(config.get("rope_parameters") or config.get("rope_scaling") or {})


def _rope_theta(config: dict[str, Any]) -> float:
    return float(config.get("rope_theta") or _rope_parameters(config).get("rope_theta") or 10000.0)


def _rope_scaling(folder: Path, config: dict[str, Any]) -> RopeScaling | None:
    params = _rope_parameters(config)
    kind = params.get("rope_type") or params.get("type") or "default"
    if kind == "default":
        return None
    if kind == "linear":
        return RopeScaling(kind="linear", factor=float(params["factor"]))
    if kind == "llama3":
        return RopeScaling(
            kind="llama3",
            factor=float(params["factor"]),
            low_freq_factor=float(params.get("low_freq_factor", 1.0)),
            high_freq_factor=float(params.get("high_freq_factor", 4.0)),
            original_max_position_embeddings=int(params.get("original_max_position_embeddings", 8192)),
        )
    raise UnsupportedModelError(f"{folder}: RoPE scaling {kind!r} is not supported (linear and llama3 are)")


def _context_length(config: dict[str, Any]) -> tuple[int, dict[str, str]]:
    """Context length; capped to the sliding window for a Qwen2 that windows only some layers
    (``use_sliding_window``), which the engine does not run. Mistral's window applies (``_sliding_window``)."""
    max_positions = int(config["max_position_embeddings"])
    window = config.get("sliding_window")
    if config["model_type"] == "qwen2" and config.get("use_sliding_window") and window and int(window) < max_positions:
        return int(window), {"context_capped_to_sliding_window": f"{max_positions} -> {int(window)}"}
    return max_positions, {}


def _sliding_window(config: dict[str, Any]) -> int | None:
    """Mistral's window: every layer sees the last ``sliding_window`` positions (null: none)."""
    window = config.get("sliding_window")
    return int(window) if config["model_type"] == "mistral" and window else None


def folder_sha256(folder: Path) -> str:
    """sha256 of the text ``"<sha256>  <relative path>\\n"`` per file, sorted by path."""
    files = sorted(
        (p.relative_to(folder).as_posix(), p)
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    lines = "".join(f"{file_sha256(path)}  {rel}\n" for rel, path in files)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def readme_license(folder: Path) -> str | None:
    """The ``license:`` of a model card's YAML front matter, if there is one."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    lines = readme.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if line.startswith("license:"):
            return line.split(":", 1)[1].strip().strip("'\"") or None
    return None
