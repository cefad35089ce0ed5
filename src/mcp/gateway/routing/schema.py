"""The routing file (``model-routing-config.yaml``) as pydantic models: the edge only.

``loader.py`` validates a file with these and converts it once into the frozen
dataclasses of ``table.py``. Unknown fields are errors, so a typo never silently widens
a route.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from mcp.base.sections import LaxSection
from mcp.gateway.routing.context import FALLBACK_REASONS

STAGE_NAMES = ("staging", "canary", "production")
SLA_CLASSES = ("critical", "high", "medium", "low")
WEIGHT_TOLERANCE = 1e-6


def _as_list(value):
    return [value] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else value


def _strings(values):
    return [str(v) for v in _as_list(values)] if isinstance(_as_list(values), list) else values


StrList = Annotated[list[str], BeforeValidator(_strings), Field(min_length=1)]


class BackendSpec(LaxSection):
    model_id: str
    instance_pool: str = "default"
    timeout_ms: int = Field(30_000, gt=0)

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        parse_model_id(value)
        return value


class ArmSpec(LaxSection):
    name: str = Field(min_length=1)
    weight: float = Field(ge=0, le=100)
    backend: BackendSpec


class SplitSpec(LaxSection):
    sticky_by: str = "user_id"
    salt: str | None = None
    arms: list[ArmSpec] = Field(min_length=1)

    @field_validator("sticky_by")
    @classmethod
    def _sticky_by(cls, value: str) -> str:
        source, _, name = value.partition(":")
        if value in ("user_id", "tenant") or (source in ("header", "metadata") and name):
            return value
        raise ValueError("must be user_id, tenant, header:NAME or metadata:KEY")

    @model_validator(mode="after")
    def _weights(self) -> SplitSpec:
        total = sum(arm.weight for arm in self.arms)
        if abs(total - 100) > WEIGHT_TOLERANCE:
            weights = ", ".join(f"{arm.name}={arm.weight:g}" for arm in self.arms)
            raise ValueError(f"arm weights must sum to 100, they sum to {total:g} ({weights})")
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {names}")
        return self


class FallbackSpec(LaxSection):
    # not "on": YAML 1.1 reads a bare on as the boolean true
    when: Annotated[list[Literal["error", "timeout", "over_capacity"]], BeforeValidator(_as_list)] = \
        Field(default_factory=lambda: list(FALLBACK_REASONS), min_length=1)
    backend: BackendSpec


class ConditionsSpec(LaxSection):
    tenant: StrList | None = None
    user_tier: StrList | None = None
    sla_class: Annotated[list[Literal["critical", "high", "medium", "low"]], BeforeValidator(_as_list)] | None = None
    min_input_tokens: int | None = Field(None, ge=0)
    max_input_tokens: int | None = Field(None, ge=0)
    model: StrList | None = None
    headers: dict[str, StrList] = {}
    metadata: dict[str, StrList] = {}

    @model_validator(mode="after")
    def _token_range(self) -> ConditionsSpec:
        low, high = self.min_input_tokens, self.max_input_tokens
        if low is not None and high is not None and low > high:
            raise ValueError(f"min_input_tokens {low} is above max_input_tokens {high}")
        return self


class _TargetSpec(LaxSection):
    backend: BackendSpec | None = None
    split: SplitSpec | None = None
    fallbacks: list[FallbackSpec] = []

    @model_validator(mode="after")
    def _one_target(self):
        if (self.backend is None) == (self.split is None):
            raise ValueError("give exactly one of backend or split")
        return self


class RouteSpec(_TargetSpec):
    name: str = Field(min_length=1)
    conditions: ConditionsSpec = ConditionsSpec()


class DefaultSpec(_TargetSpec):
    pass


class RoutingFile(LaxSection):
    version: Literal[1] = 1
    routes: list[RouteSpec] = []
    default: DefaultSpec

    @model_validator(mode="after")
    def _unique_names(self) -> RoutingFile:
        seen: set[str] = set()
        for route in self.routes:
            if route.name in seen:
                raise ValueError(f"two routes are named {route.name!r}; route names must be unique")
            seen.add(route.name)
        return self


def parse_model_id(text: str) -> tuple[str, str | None, str | None]:
    """``name:version`` -> (name, version, None); ``name@stage`` -> (name, None, stage)."""
    name, at, stage = text.partition("@")
    if at:
        if name and stage in STAGE_NAMES:
            return name, None, stage
        raise ValueError(f"{text!r}: after '@' comes a stage: {', '.join(STAGE_NAMES)}")
    name, colon, version = text.rpartition(":")
    if colon and name and version:
        return name, version, None
    raise ValueError(f"{text!r} is neither name:version nor name@stage (e.g. support-bot:2 or support-bot@production)")
