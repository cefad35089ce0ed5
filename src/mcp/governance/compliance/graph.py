"""The compliance graph: law clauses → unified concepts → the system's controls.

Nodes are ``clause:<id>``, ``concept:<id>`` and ``control:<id>`` in one networkx ``DiGraph``;
an edge runs from a clause to each concept it asks for and from a concept to each control
that satisfies it. So the controls a clause needs are its descendants, the clauses a control
satisfies its ancestors, and a gap is an applicable clause with no control below it.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from mcp.governance.compliance.errors import ComplianceReportError


@dataclass(frozen=True)
class Framework:
    id: str  # gdpr | ccpa | cn-genai | eu-ai-act
    title: str
    source: str  # the address of the official text


@dataclass(frozen=True)
class Concept:
    id: str  # e.g. RightToErasure
    title: str
    description: str


@dataclass(frozen=True)
class Control:
    id: str  # e.g. crypto_erasure
    title: str
    description: str
    satisfies: tuple[str, ...]  # concept ids
    evidence: str  # the name of its evidence query (queries.EVIDENCE_QUERIES)


@dataclass(frozen=True)
class Clause:
    id: str  # e.g. gdpr-17
    framework: str
    article: str  # as the law numbers it: "Art. 17", "1798.105", "Art. 26(6)"
    title: str
    gist: str  # one line, in our words
    source: str
    concepts: tuple[str, ...]
    not_applicable: str | None = None  # why the clause sets no duty for this system


class ComplianceGraph:
    """The loaded graph and its queries; build it with ``loader.load_graph``."""

    def __init__(self, frameworks: dict[str, Framework], clauses: dict[str, Clause], concepts: dict[str, Concept],
                 controls: dict[str, Control]) -> None:
        self.frameworks, self.clauses, self.concepts, self.controls = frameworks, clauses, concepts, controls
        self.graph = nx.DiGraph()
        for clause in clauses.values():
            self.graph.add_node(f"clause:{clause.id}", kind="clause")
            self.graph.add_edges_from((f"clause:{clause.id}", f"concept:{c}") for c in clause.concepts)
        for concept in concepts.values():
            self.graph.add_node(f"concept:{concept.id}", kind="concept")
        for control in controls.values():
            self.graph.add_node(f"control:{control.id}", kind="control")
            self.graph.add_edges_from((f"concept:{c}", f"control:{control.id}") for c in control.satisfies)

    def clauses_of(self, framework: str = "all") -> list[Clause]:
        """The clauses of one framework (or all), in file order."""
        if framework != "all" and framework not in self.frameworks:
            raise ComplianceReportError(f"unknown framework {framework!r}; use one of "
                                        f"{', '.join([*self.frameworks, 'all'])}")
        return [c for c in self.clauses.values() if framework in ("all", c.framework)]

    def controls_for(self, clause_id: str) -> list[Control]:
        """The controls a clause needs: those satisfying any of its concepts."""
        found = self._reach(nx.descendants, "clause", clause_id, "control")
        return [c for c in self.controls.values() if c.id in found]

    def concepts_without_control(self, clause_id: str) -> list[Concept]:
        """The concepts of a clause that no control satisfies."""
        clause = self._get(self.clauses, "clause", clause_id)
        return [self.concepts[c] for c in clause.concepts if not self.graph.out_degree(f"concept:{c}")]

    def clauses_satisfied_by(self, control_id: str) -> list[Clause]:
        """The clauses a control (partly) satisfies, through the concepts it meets."""
        found = self._reach(nx.ancestors, "control", control_id, "clause")
        return [c for c in self.clauses.values() if c.id in found]

    def gaps(self, framework: str = "all") -> list[Clause]:
        """Applicable clauses no control touches: the operator must meet them outside the system."""
        return [c for c in self.clauses_of(framework) if c.not_applicable is None and not self.controls_for(c.id)]

    def _reach(self, walk, kind: str, node_id: str, wanted: str) -> set[str]:
        self._get({"clause": self.clauses, "control": self.controls}[kind], kind, node_id)
        prefix = f"{wanted}:"
        return {n[len(prefix):] for n in walk(self.graph, f"{kind}:{node_id}") if n.startswith(prefix)}

    @staticmethod
    def _get(table: dict, kind: str, node_id: str):
        if node_id not in table:
            raise ComplianceReportError(f"unknown {kind} {node_id!r}; `mcp2026 compliance graph` lists them")
        return table[node_id]
