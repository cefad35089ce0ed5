"""The ``serving:`` section of ``mcp-config.yaml`` (what ``mcp2026 serve`` reads).

Schema (pydantic, strict, at the edge) and the frozen ``ServingConfig`` used inside. It lives
in ``runtime`` beside the rest of the config file's schema; nothing here imports the server.
API keys are stored as sha256 hex digests, never in clear (``mcp2026 serve --hash-key KEY``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pydantic

from mcp.base.arguments import check_model_name
from mcp.base.errors import ConfigError, InvalidRequestError
from mcp.base.sections import StrictSection
from mcp.config.isolation import WorkerLimits, WorkerSection, default_isolation, resolve_isolation, resolve_worker

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ServedModelSection(StrictSection):
    name: str = pydantic.Field(min_length=1)
    source: str = pydantic.Field(min_length=1)  # a .mcp path (relative to model_dir) or a catalog name
    version: str = pydantic.Field("1", min_length=1)
    precision: Literal["auto", "fp32", "bf16", "f16", "int4", "int8"] | None = None


class LimitsSection(StrictSection):
    max_body_bytes: int = pydantic.Field(1 << 20, gt=0)
    max_prompt_chars: int = pydantic.Field(200_000, gt=0)
    max_tokens: int = pydantic.Field(4096, gt=0)  # the most one request may ask for
    max_n: int = pydantic.Field(8, gt=0)
    max_choices: int = pydantic.Field(64, gt=0)  # n x prompts of one request: sequences it may start


class TimeoutsSection(StrictSection):
    request_s: float = pydantic.Field(600.0, gt=0)  # a request still running then ends ("deadline")
    shutdown_drain_s: float = pydantic.Field(30.0, ge=0)  # SIGTERM: how long in-flight requests may finish
    header_s: float = pydantic.Field(10.0, gt=0)  # a request's headers must be complete this soon, else closed
    body_s: float = pydantic.Field(30.0, gt=0)  # its body this soon after its headers, else 408


class TenantSection(StrictSection):
    name: str = pydantic.Field(min_length=1)
    key_sha256: list[str] = pydantic.Field(min_length=1)
    role: Literal["user", "admin"] = "user"
    requests_per_minute: int | None = pydantic.Field(None, gt=0)
    tokens_per_minute: int | None = pydantic.Field(None, gt=0)


class GovernanceSection(StrictSection):
    """``serving.governance``: guardrails, audit trail, traces (docs/governance.md)."""

    policy_bundle: str | None = None  # a folder of .rego files; None: the shipped policies
    policy_poll_s: float = pydantic.Field(1.0, gt=0)  # how often the bundle folder is checked for changes
    opa_url: str | None = None  # decide with this OPA server instead of in-process Rego
    terms: list[str] = []  # the term-list detector's terms
    stream_window_chars: int = pydantic.Field(64, ge=0)  # streamed text held back for matches across chunks
    audit: bool = True
    audit_url: str | None = None  # None: $MCP_AUDIT_URL, else $MCP_HOME/audit.db
    audit_key_file: str | None = None  # None: $MCP_HOME/audit.key
    # full: an fsync per commit; normal: none (a record survives a killed process, not a power cut)
    audit_sqlite_sync: Literal["full", "normal"] = "full"
    capture: bool = False  # keep prompts and outputs, encrypted per user (needs the request's user)
    retention_days: float | None = pydantic.Field(None, gt=0)  # prune older records at start and daily
    otlp_endpoint: str | None = None  # e.g. http://collector:4318/v1/traces; None: no traces exported


class GrpcSection(StrictSection):
    enabled: bool = False  # off unless asked: a fixed default port would collide between servers
    port: int = pydantic.Field(50051, ge=0, le=65535)  # 0: any free port (logged at start)


class AdminModelsSection(StrictSection):
    """``serving.admin_models``: where an admin load (HTTP or gRPC) may take a model file from."""

    dirs: list[str] | None = None  # None: runtime.model_dir, the model cache and the folders of serving.models
    allow_any_path: bool = False  # true: any path the server's user can read (the operator's choice)


class MetricsSection(StrictSection):
    """``serving.metrics``: which metric families ``/metrics`` serves beside the ``mcp_`` ones."""

    vllm: bool = True  # vLLM's names too (vllm:num_requests_waiting, ...): the Inference Extension, KEDA read them


class ServingSection(StrictSection):
    host: str = "127.0.0.1"
    port: int = pydantic.Field(8000, ge=0, le=65535)
    service_name: str = "mcp2026"  # what /health?service= must name
    default_model: str | None = None  # None: the first of models
    models: list[ServedModelSection] = []
    limits: LimitsSection = LimitsSection()
    timeouts: TimeoutsSection = TimeoutsSection()
    tenants: list[TenantSection] = []
    governance: GovernanceSection | None = None  # absent: no guardrails, audit or traces
    grpc: GrpcSection = GrpcSection()
    isolation: Literal["worker", "none"] | None = None  # None: worker on Linux, none elsewhere
    worker: WorkerSection = WorkerSection()  # the worker sandbox's limits (docs/security.md)
    admin_models: AdminModelsSection = AdminModelsSection()  # where admin loads may read models
    console: bool | None = None  # the web console at /console (docs/console.md); None: served on loopback only
    metrics: MetricsSection = MetricsSection()


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # a server bound here is reachable from this machine only

@dataclass(frozen=True)
class ServedModel:
    name: str
    source: str
    version: str = "1"
    precision: str | None = None


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20
    max_prompt_chars: int = 200_000
    max_tokens: int = 4096
    max_n: int = 8
    max_choices: int = 64


@dataclass(frozen=True)
class Tenant:
    name: str
    key_sha256: tuple[str, ...]
    role: str = "user"  # "user" | "admin"
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


@dataclass(frozen=True)
class GovernanceConfig:
    policy_bundle: str | None = None
    policy_poll_s: float = 1.0
    opa_url: str | None = None
    terms: tuple[str, ...] = ()
    stream_window_chars: int = 64
    audit: bool = True
    audit_url: str | None = None
    audit_key_file: str | None = None
    audit_sqlite_sync: str = "full"
    capture: bool = False
    retention_days: float | None = None
    otlp_endpoint: str | None = None


@dataclass(frozen=True)
class ServingConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    service_name: str = "mcp2026"
    default_model: str | None = None
    models: tuple[ServedModel, ...] = ()
    limits: Limits = Limits()
    request_timeout_s: float = 600.0
    shutdown_drain_s: float = 30.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    tenants: tuple[Tenant, ...] = field(default_factory=tuple)
    governance: GovernanceConfig | None = None
    grpc_port: int | None = None  # the gRPC API's port on the same host; None: no gRPC server
    isolation: str = field(default_factory=default_isolation)  # worker: each model's engine in a sandboxed process (docs/security.md)
    worker: WorkerLimits = WorkerLimits()
    admin_model_dirs: tuple[str, ...] | None = None  # absolute; None: the default folders (serving/sources.py)
    admin_any_path: bool = False
    console: bool | None = None  # the web console at /console; None: served when bound to loopback

    @property
    def console_served(self) -> bool:
        """``console``, or where it is not set, whether the server listens on loopback only."""
        return self.host in LOOPBACK_HOSTS if self.console is None else self.console
    vllm_metrics: bool = True  # /metrics serves vLLM's names beside ours (serving/vllm_metrics.py)


def resolve_serving(section: ServingSection, source: str) -> ServingConfig:
    """The checked, frozen serving config; a wrong value is a ConfigError naming its key."""
    models = tuple(_served_model(m, i, source) for i, m in enumerate(section.models))
    _check_unique([f"{m.name}:{m.version}" for m in models], f"{source}: serving.models", "name:version")
    if section.default_model is not None and section.default_model not in {m.name for m in models}:
        raise ConfigError(f"{source}: serving.default_model: {section.default_model!r} is not one of "
                          f"serving.models ({', '.join(m.name for m in models) or 'none'})")
    tenants = tuple(_tenant(t, i, source) for i, t in enumerate(section.tenants))
    _check_unique([t.name for t in tenants], f"{source}: serving.tenants", "name")
    _check_unique([k for t in tenants for k in t.key_sha256], f"{source}: serving.tenants", "key_sha256")
    return ServingConfig(
        host=section.host, port=section.port, service_name=section.service_name,
        default_model=section.default_model, models=models, limits=Limits(**section.limits.model_dump()),
        request_timeout_s=section.timeouts.request_s, shutdown_drain_s=section.timeouts.shutdown_drain_s,
        header_timeout_s=section.timeouts.header_s, body_timeout_s=section.timeouts.body_s,
        tenants=tenants, grpc_port=section.grpc.port if section.grpc.enabled else None,
        governance=_governance(section.governance, source),
        isolation=resolve_isolation(section.isolation, source), worker=resolve_worker(section.worker, source),
        admin_model_dirs=_admin_dirs(section.admin_models, source), admin_any_path=section.admin_models.allow_any_path,
        console=section.console,
        vllm_metrics=section.metrics.vllm,
    )


def _admin_dirs(section: AdminModelsSection, source: str) -> tuple[str, ...] | None:
    """The folders admin loads may read, absolute (relative ones against the config file's folder)."""
    if section.dirs is None:
        return None
    base = Path(source).parent
    return tuple(str((base / Path(folder).expanduser()).resolve()) for folder in section.dirs)


def _served_model(section: ServedModelSection, index: int, source: str) -> ServedModel:
    """The model entry, its name and version as docs/api.md defines them (as the admin APIs check)."""
    for key in ("name", "version"):
        try:
            check_model_name(getattr(section, key), f"{source}: serving.models.{index}.{key}")
        except InvalidRequestError as exc:
            raise ConfigError(str(exc)) from None
    return ServedModel(section.name, section.source, section.version, section.precision)


def _governance(section: GovernanceSection | None, source: str) -> GovernanceConfig | None:
    """The frozen section; its relative paths resolve against the config file's folder."""
    if section is None:
        return None
    base = Path(source).parent
    paths = {name: str((base / value).resolve()) for name in ("policy_bundle", "audit_key_file")
             if (value := getattr(section, name)) is not None}
    return GovernanceConfig(**{**section.model_dump(), **paths, "terms": tuple(section.terms)})


def _tenant(section: TenantSection, index: int, source: str) -> Tenant:
    for key in section.key_sha256:
        if not _SHA256.match(key):
            raise ConfigError(f"{source}: serving.tenants.{index}.key_sha256: {key[:12]!r}... is not a sha256 "
                              "hex digest (64 lowercase hex digits); make one with `mcp2026 serve --hash-key KEY`")
    return Tenant(section.name, tuple(section.key_sha256), section.role, section.requests_per_minute,
                  section.tokens_per_minute)


def _check_unique(values: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ConfigError(f"{where}: {what} {value!r} appears twice; each must be unique")
        seen.add(value)
