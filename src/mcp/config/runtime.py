"""``mcp-config.yaml``: its schema (pydantic, at the edge) and the frozen config used inside.

The YAML is validated once by ``load_config``; a wrong key or type is a ``ConfigError``
naming the key (``runtime.num_threads: ...``). Everything below the SDK gets the frozen
dataclasses. The schema is documented in docs/config.md.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from mcp.base.errors import ConfigError
from mcp.base.sections import StrictSection
from mcp.config.attestation import AttestationConfig, AttestationSection, resolve_attestation
from mcp.config.serving import ServingConfig, ServingSection, resolve_serving
from mcp.config.signing import SigningConfig, SigningSection, resolve_signing
from mcp.engine.loop_config import DEFAULT_KV_MEMORY_FRACTION, LoopConfig
from mcp.engine.options import EngineOptions, Precision
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.scheduler.slo import DEFAULT_TARGETS, SLOClass, SLOTarget


class _RuntimeKeys(StrictSection):
    """The ``runtime:`` keys that are the session's own, and the YAML form of the engine options
    that are converted on the way (``auto`` for None, a mapping for the overrides)."""

    num_threads: int | Literal["auto"] = "auto"
    precision_overrides: dict[str, Precision] = {}
    max_context: int | Literal["auto"] = "auto"
    verify_models: bool = False
    require_signed_models: bool = False
    trusted_ca: str | None = None  # PEM file of the CAs whose signatures models may carry
    model_dir: str | None = None
    cache_dir: str | None = None


def _engine_option_keys(declared: type[StrictSection]) -> dict[str, Any]:
    """Every other ``EngineOptions`` field as a key of its own type and default: an engine option
    is declared once, in the engine, and is a ``runtime:`` key without being written here."""
    types = typing.get_type_hints(EngineOptions)
    return {f.name: (types[f.name], f.default) for f in dataclasses.fields(EngineOptions)
            if f.name not in declared.model_fields}


RuntimeSection = pydantic.create_model("RuntimeSection", __base__=_RuntimeKeys, **_engine_option_keys(_RuntimeKeys))


class GenerationSection(StrictSection):
    max_tokens: int = pydantic.Field(256, gt=0)
    temperature: float = pydantic.Field(0.7, ge=0)
    top_p: float = pydantic.Field(1.0, gt=0, le=1)
    top_k: int = pydantic.Field(0, ge=0)
    min_p: float = pydantic.Field(0.0, ge=0, lt=1)
    repetition_penalty: float = pydantic.Field(1.0, gt=0)
    presence_penalty: float = pydantic.Field(0.0, ge=-2, le=2)
    frequency_penalty: float = pydantic.Field(0.0, ge=-2, le=2)
    seed: int | None = None
    stop: list[str] = []


SLOClassName = Literal["critical", "high", "medium", "low"]


class SLOTargetSection(StrictSection):
    ttft_s: float | None = pydantic.Field(None, gt=0)  # None: the class's default
    tpot_s: float | None = pydantic.Field(None, gt=0)


class SchedulerSection(StrictSection):
    policy: Literal["slo", "fcfs"] = "slo"
    max_num_seqs: int = pydantic.Field(32, gt=0)
    max_num_batched_tokens: int = pydantic.Field(256, gt=0)
    max_waiting: int = pydantic.Field(64, gt=0)
    block_size: int = pydantic.Field(16, gt=0)
    kv_cache_bytes: int | Literal["auto"] = "auto"
    kv_cache_memory_fraction: float = pydantic.Field(DEFAULT_KV_MEMORY_FRACTION, gt=0, le=1)
    kv_cache_dtype: Literal["auto", "fp32", "f16"] = "auto"
    enable_prefix_caching: bool = True
    sink_tokens: int = pydantic.Field(0, ge=0)
    window_tokens: int | None = None
    aging_s: float = pydantic.Field(10.0, gt=0)
    pacing: bool = True
    pacing_margin: float = pydantic.Field(0.25, ge=0, lt=1)
    pacing_min_allowance: float = pydantic.Field(0.5, gt=0, le=1)
    slo_targets: dict[SLOClassName, SLOTargetSection] = {}
    tenant_weights: dict[str, float] = {}


class ConfigFile(StrictSection):
    version: Literal[1] = 1
    runtime: RuntimeSection = RuntimeSection()
    generation: GenerationSection = GenerationSection()
    scheduler: SchedulerSection = SchedulerSection()
    serving: ServingSection = ServingSection()
    attestation: AttestationSection | None = None
    signing: SigningSection = SigningSection()


@dataclass(frozen=True)
class GenerationDefaults:
    """Defaults for ``Model.infer`` arguments the caller leaves out."""

    max_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuntimeConfig(EngineOptions):
    """The resolved configuration of a Session: the engine options (``EngineOptions``: device,
    precision, decode_dots, ...) and the session's own settings below."""

    num_threads: int | None = None  # None: all cores this process may use
    verify_models: bool = False
    require_signed_models: bool = False  # refuse a model without a valid MODEL.mcp.sig from trusted_ca
    trusted_ca: Path | None = None
    model_dir: Path = field(default_factory=Path.cwd)
    cache_dir: Path | None = None  # None: $MCP_HOME or ~/.cache/mcp2026
    generation: GenerationDefaults = GenerationDefaults()
    scheduler: LoopConfig = LoopConfig()
    serving: ServingConfig = ServingConfig()
    attestation: AttestationConfig | None = None  # measured launch and GET /attestation (docs/security.md)
    signing: SigningConfig = SigningConfig()


def load_config(path: str | os.PathLike) -> RuntimeConfig:
    """Read and validate an ``mcp-config.yaml``; relative paths resolve against its folder."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    return config_from_dict({} if data is None else data, base_dir=path.parent.resolve(), source=str(path))


def config_from_dict(data: Any, base_dir: Path | None = None, source: str = "config") -> RuntimeConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    try:
        parsed = ConfigFile.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None
    return _resolve(parsed, base_dir or Path.cwd(), source)


def _describe(exc: pydantic.ValidationError) -> str:
    problems = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"] if not _is_union_branch(part))
        if error["type"] == "extra_forbidden":
            problems.append(f"{key}: unknown key")
        else:
            problems.append(f"{key}: {error['msg']} (got {error.get('input')!r})")
    return "; ".join(dict.fromkeys(problems))


def _is_union_branch(part: Any) -> bool:
    """pydantic appends the union member tried (``int``, ``literal['auto']``) to the location."""
    return part in ("int", "float", "str", "bool") or str(part).startswith("literal[")


def _resolve(parsed: ConfigFile, base_dir: Path, source: str) -> RuntimeConfig:
    rt = parsed.runtime
    for key in ("num_threads", "max_context"):
        value = getattr(rt, key)
        if value != "auto" and value <= 0:
            raise ConfigError(f"{source}: runtime.{key}: must be a positive integer or auto (got {value})")
    if rt.require_signed_models and not rt.trusted_ca:
        raise ConfigError(f"{source}: runtime.require_signed_models: needs runtime.trusted_ca, the PEM file of "
                          "the CA that signs models (`mcp2026 keys init` makes an evaluation one)")
    return rt.into(
        RuntimeConfig,
        num_threads=None if rt.num_threads == "auto" else rt.num_threads,
        precision_overrides=tuple(rt.precision_overrides.items()),
        max_context=None if rt.max_context == "auto" else rt.max_context,
        trusted_ca=(base_dir / rt.trusted_ca).resolve() if rt.trusted_ca else None,
        model_dir=(base_dir / rt.model_dir).resolve() if rt.model_dir else base_dir,
        cache_dir=(base_dir / rt.cache_dir).resolve() if rt.cache_dir else None,
        generation=parsed.generation.into(GenerationDefaults, stop=tuple(parsed.generation.stop)),
        scheduler=_loop_config(parsed.scheduler, source),
        serving=resolve_serving(parsed.serving, source),
        attestation=resolve_attestation(parsed.attestation, base_dir),
        signing=resolve_signing(parsed.signing, base_dir, source),
    )


def _loop_config(section: SchedulerSection, source: str) -> LoopConfig:
    if section.kv_cache_bytes != "auto" and section.kv_cache_bytes <= 0:
        raise ConfigError(f"{source}: scheduler.kv_cache_bytes: must be a positive integer or auto "
                          f"(got {section.kv_cache_bytes})")
    for tenant, weight in section.tenant_weights.items():
        if weight <= 0:
            raise ConfigError(f"{source}: scheduler.tenant_weights.{tenant}: must be positive (got {weight})")
    targets = dict(DEFAULT_TARGETS)
    for name, override in section.slo_targets.items():
        slo, default = SLOClass[name.upper()], DEFAULT_TARGETS[SLOClass[name.upper()]]
        targets[slo] = SLOTarget(override.ttft_s or default.ttft_s, override.tpot_s or default.tpot_s)
    if section.window_tokens is not None and section.window_tokens < section.block_size:
        raise ConfigError(f"{source}: scheduler.window_tokens: must be at least block_size ({section.block_size}) "
                          f"or null (got {section.window_tokens})")
    return section.into(
        LoopConfig,
        scheduler=SchedulerConfig(section.max_num_seqs, section.max_num_batched_tokens, section.max_waiting),
        kv_cache_bytes=None if section.kv_cache_bytes == "auto" else section.kv_cache_bytes,
        slo_targets=targets,
        tenant_weights=dict(section.tenant_weights),
    )
