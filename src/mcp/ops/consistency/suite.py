"""Prompt suites: a versioned YAML or JSON file of prompts with the generation settings.

    suite: default          # name
    version: 1              # bump when prompts change: golden files record it
    max_tokens: 24          # greedy tokens per prompt (EOS does not stop an engine)
    top_logprobs: 5         # k of the top-k log-probabilities recorded in golden files
    prompts:
      - {id: capital, kind: raw, text: "The capital of France is"}
      - {id: water, kind: chat, messages: [{role: user, content: "..."}], max_tokens: 16}

Comparisons are greedy: sampled outputs differ by each engine's random number generator, not
by its arithmetic. Shipped suites live in ``data/`` and are named without the extension.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Literal

import pydantic
import yaml

from mcp.base.errors import ConfigError

DATA = Path(__file__).parent / "data"


class _Message(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class _PromptModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    id: str = pydantic.Field(min_length=1)
    kind: Literal["raw", "chat"]
    text: str | None = None
    messages: list[_Message] | None = None
    max_tokens: int | None = pydantic.Field(default=None, ge=1, le=1024)

    @pydantic.model_validator(mode="after")
    def _one_body(self) -> _PromptModel:
        if self.kind == "raw" and (not self.text or self.messages is not None):
            raise ValueError(f"prompt {self.id!r}: a raw prompt has a non-empty 'text' and no 'messages'")
        if self.kind == "chat" and (not self.messages or self.text is not None):
            raise ValueError(f"prompt {self.id!r}: a chat prompt has 'messages' and no 'text'")
        return self


class _SuiteModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    suite: str = pydantic.Field(min_length=1)
    version: int = pydantic.Field(ge=1)
    max_tokens: int = pydantic.Field(default=24, ge=1, le=1024)
    top_logprobs: int = pydantic.Field(default=5, ge=1, le=20)
    prompts: list[_PromptModel] = pydantic.Field(min_length=1)


@dataclass(frozen=True)
class SuitePrompt:
    id: str
    kind: str  # raw | chat
    text: str | None
    messages: tuple[tuple[str, str], ...]  # (role, content)
    max_tokens: int


@dataclass(frozen=True)
class Suite:
    name: str
    version: int
    top_logprobs: int
    prompts: tuple[SuitePrompt, ...]
    sha256: str  # of the file's bytes, recorded in reports and golden files
    path: str


def suite_path(name_or_path: str) -> Path:
    """A file path, or the name of a shipped suite (``default``, ``ci``)."""
    shipped = DATA / f"suite-{name_or_path}.yaml"
    if shipped.exists():
        return shipped
    path = Path(name_or_path)
    if not path.exists():
        names = sorted(p.stem.removeprefix("suite-") for p in DATA.glob("suite-*.yaml"))
        raise ConfigError(f"suite {name_or_path!r} is neither a file nor a shipped suite ({', '.join(names)})")
    return path


def load_suite(name_or_path: str) -> Suite:
    path = suite_path(name_or_path)
    raw = path.read_bytes()
    model = _validated(path, _parsed(path, raw))
    prompts = tuple(_prompt(p, model.max_tokens) for p in model.prompts)
    ids = [p.id for p in prompts]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"suite {path}: prompt ids must be unique, got {sorted(i for i in set(ids) if ids.count(i) > 1)}")
    return Suite(model.suite, model.version, model.top_logprobs, prompts, sha256(raw).hexdigest(), str(path))


def _parsed(path: Path, raw: bytes) -> object:
    try:
        return json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"suite {path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None


def _validated(path: Path, data: object) -> _SuiteModel:
    try:
        return _SuiteModel.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"suite {path}: {where}: {first['msg']} ({exc.error_count()} error(s))") from None


def _prompt(model: _PromptModel, default_max_tokens: int) -> SuitePrompt:
    messages = tuple((m.role, m.content) for m in model.messages or ())
    return SuitePrompt(model.id, model.kind, model.text, messages, model.max_tokens or default_max_tokens)
