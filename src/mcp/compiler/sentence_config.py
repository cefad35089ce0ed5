"""The sentence-transformers configuration beside a model's weights: how it pools embeddings.

Read as sentence-transformers itself reads it: ``modules.json`` lists the modules in order (a
``Normalize`` module means unit-length embeddings), the Pooling module's ``config.json`` (at the
module's ``path``, usually ``1_Pooling``) picks mean, CLS or last-token pooling, and
``sentence_bert_config.json``'s ``max_seq_length`` is the longest input. An encoder folder
(bert_source.py) always gets a pooling; a decoder folder (hf_source.py) declares one only when
it ships ``modules.json`` (gte-Qwen2 and Qwen3-Embedding do: last-token pooling).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.base.errors import ModelFormatError, UnsupportedModelError
from mcp.modelfile.spec import Pooling

_POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                  "pooling_mode_lasttoken": "last"}


def sentence_pooling(folder: Path, max_positions: int) -> Pooling:
    """The pooling sentence-transformers applies to this folder's model (see the module doc)."""
    modules = read_json(folder / "modules.json", [])
    if not isinstance(modules, list):
        raise ModelFormatError(f"{folder}/modules.json: expected a list of modules")
    kinds = {str(m.get("type", "")).rsplit(".", 1)[-1]: m for m in modules if isinstance(m, dict)}
    mode = "mean"
    if "Pooling" in kinds:
        pooling = read_json(folder / str(kinds["Pooling"].get("path", "")) / "config.json", {})
        chosen = [mode for key, mode in _POOLING_MODES.items() if pooling.get(key)]
        others = [key for key, value in pooling.items() if key.startswith("pooling_mode") and value
                  and key not in _POOLING_MODES]
        if len(chosen) != 1 or others:
            raise UnsupportedModelError(f"{folder}: the Pooling module asks for {sorted(k for k, v in pooling.items() if k.startswith('pooling_mode') and v)}; "
                                        "one of mean, CLS or last-token pooling is supported")
        mode = chosen[0]
    limit = read_json(folder / "sentence_bert_config.json", {}).get("max_seq_length") or max_positions
    return Pooling(mode=mode, normalize="Normalize" in kinds, max_tokens=min(int(limit), max_positions))



def read_json(path: Path, default: Any) -> Any:
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"{path}: not valid JSON ({exc})") from None
