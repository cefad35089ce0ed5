"""Evidence bundles (``.ceb``), one per model release: a signed manifest (model and data
lineage, clauses covered), the compliance report, SBOMs in SPDX 2.3 and CycloneDX, and an
RFC 3161 timestamp over the signature. See docs/compliance.md, "Evidence bundles"."""
