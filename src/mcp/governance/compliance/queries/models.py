"""Evidence from the model files: lineage in each ``.mcp`` header (and the registry), the
datasets each header declares (data lineage), signatures.

``model_signatures`` looks for the detached signature ``MODEL.mcp.sig`` beside each served
model. With ``runtime.trusted_ca`` configured it verifies each one (``governance.signing``):
met when every served model's verifies and ``runtime.require_signed_models`` makes the
runtime refuse the others; without a CA a signature is reported present but unverified.
"""

from __future__ import annotations

from mcp.base.errors import MCPError
from mcp.governance.compliance.context import EvidenceContext, ModelFileRef
from mcp.governance.compliance.status import ControlResult, Status, result

SIGNATURE_SUFFIX = ".sig"


def model_lineage(context: EvidenceContext) -> ControlResult:
    refs = context.model_files()
    if not refs:
        return result(Status.NOT_MET, f"{context.source}: serving.models lists no model: no model file to check")
    facts, complete = [], 0
    for ref in refs:
        fact, ok = _lineage_of(ref)
        facts.append(fact)
        complete += ok
    facts += _registry_lineage(context)
    status = Status.MET if complete == len(refs) else Status.PARTLY if complete else Status.NOT_MET
    return result(status, *facts)


def _lineage_of(ref: ModelFileRef) -> tuple[str, bool]:
    from mcp.modelfile.reader import open_model

    key = f"{ref.model.name}:{ref.model.version}"
    if ref.path is None:
        return f"{key}: model file {ref.model.source!r} not found (model_dir, working folder, cache)", False
    try:
        with open_model(ref.path) as model:
            lineage = model.header.lineage
    except MCPError as exc:
        return f"{key}: {ref.path} does not open: {exc}", False
    if not lineage.source_sha256 or not lineage.compiler_version:
        return f"{key}: {ref.path.name} has no source hash or compiler version in its lineage", False
    license_ = lineage.license or "no license recorded"
    datasets = ", ".join(d.name for d in lineage.datasets) or "none declared"
    return (f"{key}: {ref.path.name} compiled from {lineage.source_name} ({lineage.source_format}, sha256 "
            f"{lineage.source_sha256[:16]}…) by mcp2026 {lineage.compiler_version} at {lineage.created_at}; "
            f"license: {license_}; datasets: {datasets}"), True


def _registry_lineage(context: EvidenceContext) -> list[str]:
    if context.registry_versions is None:
        return []
    versions = context.registry_versions()
    with_lineage = [v for v in versions if v.lineage]
    return [f"registry: {len(with_lineage)} of {len(versions)} model version(s) carry lineage"
            + "".join(f"; {v.model_id} has none" for v in versions if not v.lineage)]


def data_lineage(context: EvidenceContext) -> ControlResult:
    """Met when every served model declares its datasets, each with a license and a sha256."""
    refs = context.model_files()
    if not refs:
        return result(Status.NOT_MET, f"{context.source}: serving.models lists no model: no model file to check")
    facts, documented, declared = [], 0, 0
    for ref in refs:
        fact, num_datasets, complete = _datasets_of(ref)
        facts.append(fact)
        declared += num_datasets > 0
        documented += complete
    status = Status.MET if documented == len(refs) else Status.PARTLY if declared else Status.NOT_MET
    return result(status, *facts)


def _datasets_of(ref: ModelFileRef) -> tuple[str, int, bool]:
    """A fact about ``ref``'s declared datasets, how many it declares, and whether each has a
    license and a sha256."""
    from mcp.modelfile.reader import open_model

    key = f"{ref.model.name}:{ref.model.version}"
    if ref.path is None:
        return f"{key}: model file {ref.model.source!r} not found (model_dir, working folder, cache)", 0, False
    try:
        with open_model(ref.path) as model:
            datasets = model.header.lineage.datasets
    except MCPError as exc:
        return f"{key}: {ref.path} does not open: {exc}", 0, False
    if not datasets:
        return f"{key}: {ref.path.name} declares no dataset (declare them with mcp2026 compile --lineage)", 0, False
    missing = [f"{d.name} has no {' or '.join(f for f in ('license', 'sha256') if not getattr(d, f))}"
               for d in datasets if not (d.license and d.sha256)]
    names = ", ".join(f"{d.name} ({d.license or 'no license'})" for d in datasets)
    fact = f"{key}: {ref.path.name} declares {len(datasets)} dataset(s): {names}"
    return fact + "".join(f"; {m}" for m in missing), len(datasets), not missing


def model_signatures(context: EvidenceContext) -> ControlResult:
    refs = [ref for ref in context.model_files() if ref.path is not None]
    if not refs:
        return result(Status.NOT_MET, "no served model file found to look for a signature beside")
    signed = [ref for ref in refs if ref.path.with_name(ref.path.name + SIGNATURE_SUFFIX).is_file()]
    unsigned = [f"{ref.model.name}:{ref.model.version}: no signature (looked for {ref.path}{SIGNATURE_SUFFIX})"
                for ref in refs if ref not in signed]
    if context.config.trusted_ca is None:
        facts = [f"{ref.model.name}:{ref.model.version}: signature {ref.path.name}{SIGNATURE_SUFFIX} present, not "
                 "verified (set runtime.trusted_ca to verify it)" for ref in signed]
        return result(Status.PARTLY if signed else Status.NOT_MET, *facts, *unsigned)
    verified, facts = _verified_signatures(context, signed)
    required = context.config.require_signed_models
    facts.append(f"runtime.require_signed_models is {'on: unsigned models are refused' if required else 'off'}")
    if verified == len(refs) and required:
        return result(Status.MET, *facts, *unsigned)
    return result(Status.PARTLY if verified else Status.NOT_MET, *facts, *unsigned)


def _verified_signatures(context: EvidenceContext, signed: list[ModelFileRef]) -> tuple[int, list[str]]:
    """How many of the signatures verify against runtime.trusted_ca, and a fact for each."""
    from mcp.governance.signing.models import trusted_certificates, verify_model
    from mcp.base.errors import ModelSignatureError

    trusted = trusted_certificates(context.config.trusted_ca)
    verified, facts = 0, []
    for ref in signed:
        key = f"{ref.model.name}:{ref.model.version}"
        try:
            info = verify_model(ref.path, trusted)
        except ModelSignatureError as exc:
            facts.append(f"{key}: signature refused: {exc}")
            continue
        verified += 1
        facts.append(f"{key}: signature {ref.path.name}{SIGNATURE_SUFFIX} verified, signed by {info.signer_name}")
    return verified, facts
