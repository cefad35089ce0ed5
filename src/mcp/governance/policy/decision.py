"""``Decision``: what the policies said about one stage of one request.

A policy package (``mcp.input`` or ``mcp.output``) contributes to three sets, each item naming
its rule and giving a reason: ``deny`` (refuse; on output, stop), ``redact`` (replace the spans
of the findings of ``kinds``), ``reroute`` (input only: run on ``model`` instead). Deny wins
over reroute, which wins over redact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp.governance.errors import PolicyError

STAGES = ("input", "output")


@dataclass(frozen=True)
class RuleHit:
    """One rule that fired: its id, its reason, and what it asks for (redact kinds, reroute model)."""

    rule: str
    reason: str
    kinds: tuple[str, ...] = ()
    model: str | None = None


@dataclass(frozen=True)
class Decision:
    stage: str
    policy_version: str
    deny: tuple[RuleHit, ...] = ()
    redact: tuple[RuleHit, ...] = ()
    reroute: tuple[RuleHit, ...] = ()
    redact_kinds: frozenset[str] = field(default=frozenset())

    @property
    def action(self) -> str:
        """allow | deny | reroute | redact."""
        return "deny" if self.deny else "reroute" if self.reroute else "redact" if self.redact else "allow"

    @property
    def reroute_model(self) -> str | None:
        return self.reroute[0].model if self.reroute and not self.deny else None

    def as_record(self) -> dict[str, Any]:
        """The decision as the audit trail keeps it: the action and every rule id that fired."""
        return {"stage": self.stage, "action": self.action, "policy_version": self.policy_version,
                "rules": sorted({hit.rule for hit in (*self.deny, *self.reroute, *self.redact)})}


def parse_decision(stage: str, answer: Any, policy_version: str) -> Decision:
    """A ``Decision`` from the JSON a policy answered; a malformed answer is a PolicyError."""
    if not isinstance(answer, dict):
        raise PolicyError(f"the {stage} policy answered {answer!r}, not an object with deny/redact/reroute")
    hits = {name: tuple(sorted((_hit(stage, name, item) for item in answer.get(name) or ()),
                               key=lambda h: h.rule)) for name in ("deny", "redact", "reroute")}
    kinds = frozenset(kind for hit in hits["redact"] for kind in hit.kinds)
    return Decision(stage, policy_version, hits["deny"], hits["redact"], hits["reroute"], kinds)


def _hit(stage: str, name: str, item: Any) -> RuleHit:
    if not isinstance(item, dict) or not isinstance(item.get("rule"), str) or not isinstance(item.get("reason"), str):
        raise PolicyError(f"the {stage} policy's {name} set holds {item!r}; each item must be an object "
                          'with string "rule" and "reason" fields')
    kinds = item.get("kinds", ())
    if name == "redact" and (not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds)):
        raise PolicyError(f"the {stage} policy's redact item of rule {item['rule']} needs \"kinds\": a list of "
                          "finding kinds")
    model = item.get("model")
    if name == "reroute" and not isinstance(model, str):
        raise PolicyError(f"the {stage} policy's reroute item of rule {item['rule']} needs \"model\": a model name")
    return RuleHit(item["rule"], item["reason"], tuple(kinds), model)
