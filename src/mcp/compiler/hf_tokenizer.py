"""Read the tokenizer of a Hugging Face model folder into a ``TokenizerSpec``.

The folder's ``tokenizer.json`` is used as it is. Around it:

- ``tokenizer_config.json``: the BOS/EOS/pad token strings, ``add_bos_token`` /
  ``add_eos_token`` and the chat template. Where the flags are absent, they are read off
  what ``tokenizer.json``'s own post-processor adds (Llama 3 adds BOS that way).
- ``chat_template.jinja`` or ``chat_template.json``: the chat template, which newer
  transformers versions save beside the config; these win over the config's copy.
- ``generation_config.json``: ``eos_token_id`` (one id or a list), merged into the end ids.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from mcp.base.errors import ModelFormatError
from mcp.modelfile.spec import TokenizerSpec


def tokenizer_spec_from_hf_folder(folder: Path) -> TokenizerSpec:
    """The tokenizer, special tokens and chat template of a Hugging Face model folder."""
    folder = Path(folder)
    tokenizer = _load_tokenizer(folder / "tokenizer.json")
    config = _read_json(folder / "special_tokens_map.json") | _read_json(folder / "tokenizer_config.json")
    bos_token, eos_token = _token_text(config.get("bos_token")), _token_text(config.get("eos_token"))
    bos_id = _token_id(tokenizer, bos_token, "bos_token")
    eos_id = _token_id(tokenizer, eos_token, "eos_token")
    add_bos, add_eos = _special_token_flags(tokenizer, config, bos_id, eos_id)
    generation = _read_json(folder / "generation_config.json")
    return TokenizerSpec(
        tokenizer_json=tokenizer.to_str(),
        chat_template=_chat_template(folder, config),
        bos_token=bos_token if bos_id is not None else None,
        eos_token=eos_token if eos_id is not None else None,
        bos_token_id=bos_id,
        eos_token_ids=_end_ids(eos_id, generation.get("eos_token_id"), folder),
        pad_token_id=_token_id(tokenizer, _token_text(config.get("pad_token")), "pad_token"),
        add_bos_token=add_bos,
        add_eos_token=add_eos,
    )


def _load_tokenizer(path: Path) -> Tokenizer:
    if not path.is_file():
        raise ModelFormatError(
            f"{path.parent}: tokenizer.json is missing; the model folder needs the fast tokenizer file "
            "(save it with transformers' `tokenizer.save_pretrained(folder)`)"
        )
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises plain Exception on a bad file
        raise ModelFormatError(f"{path}: not a valid tokenizers serialization ({exc})") from None


def _special_token_flags(
    tokenizer: Tokenizer, config: dict[str, Any], bos_id: int | None, eos_id: int | None
) -> tuple[bool, bool]:
    """``add_bos_token`` / ``add_eos_token``: as the config states them, else as observed."""
    with_special = tokenizer.encode("a", add_special_tokens=True).ids
    without = tokenizer.encode("a", add_special_tokens=False).ids
    added = len(with_special) > len(without)
    observed_bos = added and bos_id is not None and with_special[0] == bos_id != without[0]
    observed_eos = added and eos_id is not None and with_special[-1] == eos_id != without[-1]
    add_bos = config.get("add_bos_token")
    add_eos = config.get("add_eos_token")
    add_bos = observed_bos if not isinstance(add_bos, bool) else add_bos and bos_id is not None
    add_eos = observed_eos if not isinstance(add_eos, bool) else add_eos and eos_id is not None
    return add_bos, add_eos


def _chat_template(folder: Path, config: dict[str, Any]) -> str | None:
    jinja_file = folder / "chat_template.jinja"
    if jinja_file.is_file():
        return jinja_file.read_text(encoding="utf-8")
    template = _read_json(folder / "chat_template.json").get("chat_template", config.get("chat_template"))
    if isinstance(template, list):  # named templates: [{"name": ..., "template": ...}]
        named = {entry.get("name"): entry.get("template") for entry in template if isinstance(entry, dict)}
        template = named.get("default", next(iter(named.values()), None))
    if template is not None and not isinstance(template, str):
        raise ModelFormatError(f"{folder}: chat_template is a {type(template).__name__}, not a string")
    return template


def _end_ids(eos_id: int | None, generation_eos: Any, folder: Path) -> tuple[int, ...]:
    extra = generation_eos if isinstance(generation_eos, list) else [generation_eos]
    if not all(isinstance(i, int) or i is None for i in extra):
        raise ModelFormatError(
            f"{folder}: generation_config.json eos_token_id must be an id or a list of ids, "
            f"got {generation_eos!r}"
        )
    return tuple(dict.fromkeys(i for i in [eos_id, *extra] if i is not None))


def _token_text(value: Any) -> str | None:
    """A special token from the config: a string, or an AddedToken dict with "content"."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _token_id(tokenizer: Tokenizer, token: str | None, name: str) -> int | None:
    if token is None:
        return None
    token_id = tokenizer.token_to_id(token)
    if token_id is None:
        raise ModelFormatError(
            f"{name} {token!r} from tokenizer_config.json is not in tokenizer.json's vocabulary"
        )
    return token_id


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFormatError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelFormatError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data
