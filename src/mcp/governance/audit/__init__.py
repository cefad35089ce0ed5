"""The audit trail: one hash-chained, append-only record per request (``log.AuditLog``), in
SQLite or PostgreSQL; ``verify`` names any edited, deleted, inserted or reordered record;
captured prompts and outputs are encrypted with a key per data subject, which ``erase``
destroys. See docs/governance.md, "Policies and audit"."""
