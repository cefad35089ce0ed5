"""The tolerance table: per (reference, candidate) pattern, the bounds a summary must meet.

    version: 1
    rules:
      - reference: transformers      # fnmatch patterns; the first matching rule applies
        candidate: native-fp32
        min_top1_agreement: 0.999
        max_mse: 1.0e-4
        ...

Bounds: ``min_top1_agreement``, ``max_mse``, ``max_kl``, ``max_topk_logprob_mae``,
``min_token_match``. A bound whose figure the pair cannot give (no full logits on one
side, no teacher-forced scores over HTTP) is reported as not applicable, never as passed.
A pair with no rule is refused before anything runs. The shipped table is
``data/tolerances.yaml``; its floors were measured (docs/consistency.md, RESULTS.md).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pydantic
import yaml

from mcp.base.errors import ConfigError
from mcp.ops.consistency.metrics import Summary

DEFAULT_TABLE = Path(__file__).parent / "data" / "tolerances.yaml"
# bound name -> (summary field, True when the figure must be at least the bound)
BOUNDS = {
    "min_top1_agreement": ("top1_agreement", True),
    "max_mse": ("mse", False),
    "max_kl": ("kl", False),
    "max_topk_logprob_mae": ("topk_logprob_mae", False),
    "min_token_match": ("token_match", True),
}


class _RuleModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    reference: str
    candidate: str
    note: str = ""
    min_top1_agreement: float | None = pydantic.Field(default=None, ge=0, le=1)
    max_mse: float | None = pydantic.Field(default=None, ge=0)
    max_kl: float | None = pydantic.Field(default=None, ge=0)
    max_topk_logprob_mae: float | None = pydantic.Field(default=None, ge=0)
    min_token_match: float | None = pydantic.Field(default=None, ge=0, le=1)


class _TableModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    version: int = pydantic.Field(ge=1)
    rules: list[_RuleModel] = pydantic.Field(min_length=1)


@dataclass(frozen=True)
class Rule:
    reference: str
    candidate: str
    note: str
    bounds: tuple[tuple[str, float], ...]  # (bound name, value)


@dataclass(frozen=True)
class Check:
    bound: str
    limit: float
    value: float | None  # None: the pair cannot give this figure
    passed: bool | None  # None: not applicable


@dataclass(frozen=True)
class ToleranceTable:
    rules: tuple[Rule, ...]
    path: str

    def rule_for(self, reference: str, candidate: str) -> Rule:
        for rule in self.rules:
            if fnmatch.fnmatchcase(reference, rule.reference) and fnmatch.fnmatchcase(candidate, rule.candidate):
                return rule
        raise ConfigError(f"the tolerance table {self.path} has no rule for reference {reference!r} and "
                          f"candidate {candidate!r}; add one (docs/consistency.md)")


def load_tolerances(path: str | Path | None = None) -> ToleranceTable:
    path = Path(path) if path else DEFAULT_TABLE
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read the tolerance table {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"the tolerance table {path} is not valid YAML: {exc}") from None
    try:
        model = _TableModel.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"tolerance table {path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return ToleranceTable(tuple(_rule(r) for r in model.rules), str(path))


def _rule(model: _RuleModel) -> Rule:
    bounds = tuple((name, getattr(model, name)) for name in BOUNDS if getattr(model, name) is not None)
    return Rule(model.reference, model.candidate, model.note, bounds)


def evaluate(rule: Rule, summary: Summary) -> tuple[Check, ...]:
    return tuple(_check(name, limit, getattr(summary, BOUNDS[name][0])) for name, limit in rule.bounds)


def _check(bound: str, limit: float, value: float | None) -> Check:
    if value is None:
        return Check(bound, limit, None, None)
    at_least = BOUNDS[bound][1]
    return Check(bound, limit, value, value >= limit if at_least else value <= limit)

