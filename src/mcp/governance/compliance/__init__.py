"""The compliance metadata graph (clauses → concepts → controls, versioned YAML in ``clauses/``)
and the live compliance report computed from the running system's evidence (docs/compliance.md)."""
