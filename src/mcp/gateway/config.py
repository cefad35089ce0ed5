"""The gateway's config file (``mcp2026 gateway --config gateway.yaml``): pydantic at the edge,
converted once into a frozen ``GatewayConfig``. Unknown keys are errors naming where they are.

    gateway: {host: 127.0.0.1, port: 8080, registry: sqlite:///..., tenants: [...]}
    canary: {controller: true, interval_s: 1.0}
    pools:
      gpu-a10-pool:
        members: [{name: a1, url: "http://10.0.0.5:8000"}]
        health: {path: /ready, interval_s: 2, timeout_s: 1}
        breaker: {failure_threshold: 3, cool_down_s: 5, half_open_max: 1}
        max_attempts: 3
        picking: prefix            # or least_outstanding (the default)
        prefix: {block_chars: 256, load_factor: 1.25}
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pydantic
import yaml

from mcp.base.sections import LaxSection
from mcp.config.serving import ServedModel, ServedModelSection, Tenant, TenantSection
from mcp.gateway.errors import GatewayConfigError
from mcp.gateway.pools.prefix import PrefixPicking
from mcp.gateway.pools.spec import BreakerSpec, HealthSpec, MemberSpec, PoolSpec

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class MemberSection(LaxSection):
    name: str = pydantic.Field(min_length=1)
    url: pydantic.HttpUrl | None = None  # a remote member ...
    local: list[ServedModelSection] | None = pydantic.Field(None, min_length=1)  # ... or models loaded here

    @pydantic.model_validator(mode="after")
    def _one_kind(self) -> MemberSection:
        if (self.url is None) == (self.local is None):
            raise ValueError("give exactly one of url (a remote server) or local (models to load in the gateway)")
        return self


class HealthSection(LaxSection):
    path: str = "/ready"  # readiness: 503 while a model cannot serve (/v1/models for servers without it)
    interval_s: float = pydantic.Field(2.0, gt=0)
    timeout_s: float = pydantic.Field(1.0, gt=0)


class BreakerSection(LaxSection):
    failure_threshold: int = pydantic.Field(3, ge=1)
    cool_down_s: float = pydantic.Field(5.0, ge=0)
    half_open_max: int = pydantic.Field(1, ge=1)


class PrefixSection(LaxSection):
    block_chars: int = pydantic.Field(256, ge=1)  # prompt characters that make the affinity key
    load_factor: float = pydantic.Field(1.25, ge=1.0)  # a member may hold this times the average in flight


class PoolSection(LaxSection):
    members: list[MemberSection] = pydantic.Field(min_length=1)
    health: HealthSection = HealthSection()
    breaker: BreakerSection = BreakerSection()
    max_attempts: int = pydantic.Field(3, ge=1)
    connect_timeout_s: float = pydantic.Field(2.0, gt=0)
    api_key_env: str | None = None  # the environment variable holding the members' API key
    probe: bool = False
    picking: Literal["least_outstanding", "prefix"] = "least_outstanding"
    prefix: PrefixSection = PrefixSection()


class GatewaySection(LaxSection):
    host: str = "127.0.0.1"
    port: int = pydantic.Field(8080, ge=0, le=65535)
    registry: str | None = None  # needed for name@stage backends and rollouts
    tenants: list[TenantSection] = []
    max_body_bytes: int = pydantic.Field(1 << 20, gt=0)
    chars_per_token: float = pydantic.Field(4.0, gt=0)  # input_tokens is estimated from characters
    rules_poll_s: float = pydantic.Field(1.0, gt=0)
    header_timeout_s: float = pydantic.Field(10.0, gt=0)  # a request's headers must be complete this soon
    body_timeout_s: float = pydantic.Field(30.0, gt=0)  # its body this soon after its headers, else 408
    console: bool = True  # the web console at /console (docs/console.md); false: not served


class CanarySection(LaxSection):
    controller: bool = True  # run the canary controller in this gateway
    interval_s: float = pydantic.Field(1.0, gt=0)


class GatewayFile(LaxSection):
    gateway: GatewaySection = GatewaySection()
    canary: CanarySection = CanarySection()
    pools: dict[str, PoolSection] = pydantic.Field(min_length=1)


@dataclass(frozen=True)
class GatewayConfig:
    host: str
    port: int
    registry_url: str | None
    tenants: tuple[Tenant, ...]
    max_body_bytes: int
    chars_per_token: float
    rules_poll_s: float
    canary_controller: bool
    canary_interval_s: float
    pools: tuple[PoolSpec, ...]
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    console: bool = True


def load_gateway_config(path: str | Path) -> GatewayConfig:
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise GatewayConfigError(f"gateway config {path} cannot be read: {exc}") from None
    return parse_gateway_config(document, str(path))


def parse_gateway_config(document: object, source: str = "<gateway>") -> GatewayConfig:
    if not isinstance(document, dict):
        raise GatewayConfigError(f"{source}: the gateway config is a mapping with pools: (and gateway:, canary:)")
    try:
        spec = GatewayFile.model_validate(document)
    except pydantic.ValidationError as exc:
        lines = [f"{source}: {exc.error_count()} error(s) in the gateway config"]
        lines += [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise GatewayConfigError("\n".join(lines)) from None
    g = spec.gateway
    return GatewayConfig(g.host, g.port, g.registry, _tenants(g.tenants, source), g.max_body_bytes,
                         g.chars_per_token, g.rules_poll_s, spec.canary.controller, spec.canary.interval_s,
                         tuple(_pool(name, section, source) for name, section in spec.pools.items()),
                         header_timeout_s=g.header_timeout_s, body_timeout_s=g.body_timeout_s, console=g.console)


def _pool(name: str, section: PoolSection, source: str) -> PoolSpec:
    names = [m.name for m in section.members]
    if len(set(names)) != len(names):
        raise GatewayConfigError(f"{source}: pools.{name}.members: member names must be unique: {names}")
    api_key = None
    if section.api_key_env is not None:
        api_key = os.environ.get(section.api_key_env)
        if not api_key:
            raise GatewayConfigError(f"{source}: pools.{name}.api_key_env: ${section.api_key_env} is not set")
    members = tuple(_member(m) for m in section.members)
    return PoolSpec(name, members, HealthSpec(**section.health.model_dump()),
                    BreakerSpec(**section.breaker.model_dump()), section.max_attempts, section.connect_timeout_s,
                    api_key, section.probe, section.picking, PrefixPicking(**section.prefix.model_dump()))


def _member(section: MemberSection) -> MemberSpec:
    if section.local is None:
        return MemberSpec(section.name, str(section.url).rstrip("/"))
    models = tuple(ServedModel(m.name, m.source, m.version, m.precision) for m in section.local)
    return MemberSpec(section.name, f"http://{section.name}.local", models)


def _tenants(sections: list[TenantSection], source: str) -> tuple[Tenant, ...]:
    tenants = []
    for index, t in enumerate(sections):
        for key in t.key_sha256:
            if not _SHA256.match(key):
                raise GatewayConfigError(f"{source}: gateway.tenants.{index}.key_sha256: {key[:12]!r}... is not a "
                                         "sha256 hex digest; make one with `mcp2026 serve --hash-key KEY`")
        tenants.append(Tenant(t.name, tuple(t.key_sha256), t.role, t.requests_per_minute, t.tokens_per_minute))
    return tuple(tenants)
