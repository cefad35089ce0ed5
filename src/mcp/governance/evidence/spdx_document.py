"""The SPDX 2.3 document of a model release, as ``spdx-tools`` model objects.

The document describes the model package; the model was GENERATED_FROM its source artifact
and DEPENDS_ON the runtime's Python packages; each declared dataset is a package the model
was GENERATED_FROM (SPDX 2.3 has no "trained on"; the package comment says so).
"""

from __future__ import annotations

from datetime import datetime

from spdx_tools.common.spdx_licensing import spdx_licensing
from spdx_tools.spdx.model import (
    Actor,
    ActorType,
    Checksum,
    ChecksumAlgorithm,
    CreationInfo,
    Document,
    ExternalPackageRef,
    ExternalPackageRefCategory,
    Package,
    PackagePurpose,
    Relationship,
    RelationshipType,
    SpdxNoAssertion,
)

from mcp.governance.evidence.sbom import TOOL, ModelArtifact, PythonPackage, spdx_id
from mcp.modelfile.spec import Dataset

MODEL_ID = "SPDXRef-model"
SOURCE_ID = "SPDXRef-model-source"


def build_document(model: ModelArtifact, packages: list[PythonPackage], created: datetime,
                   namespace: str) -> Document:
    info = CreationInfo(spdx_version="SPDX-2.3", spdx_id="SPDXRef-DOCUMENT", name=f"{model.name} release",
                        document_namespace=namespace, creators=[Actor(ActorType.TOOL, TOOL)],
                        created=created.replace(microsecond=0))
    lineage = model.lineage
    model_package = Package(
        spdx_id=MODEL_ID, name=model.name, download_location=SpdxNoAssertion(), version=model.sha256[:12],
        file_name=model.file_name, files_analyzed=False, primary_package_purpose=PackagePurpose.OTHER,
        checksums=[Checksum(ChecksumAlgorithm.SHA256, model.sha256)], license_declared=_license(lineage.license),
        comment=f"compiled by mcp2026 {lineage.compiler_version}, recipe "
                + ", ".join(f"{k}={v}" for k, v in sorted(lineage.recipe.items())),
    )
    source = Package(
        spdx_id=SOURCE_ID, name=lineage.source_name, download_location=SpdxNoAssertion(), files_analyzed=False,
        checksums=[Checksum(ChecksumAlgorithm.SHA256, lineage.source_sha256)],
        comment=f"{lineage.source_format}; base model {lineage.base_model or 'not declared'}",
    )
    document = Document(creation_info=info, packages=[model_package, source])
    document.relationships.append(Relationship("SPDXRef-DOCUMENT", RelationshipType.DESCRIBES, MODEL_ID))
    document.relationships.append(Relationship(MODEL_ID, RelationshipType.GENERATED_FROM, SOURCE_ID))
    for dataset in lineage.datasets:
        document.packages.append(_dataset_package(dataset))
        document.relationships.append(
            Relationship(MODEL_ID, RelationshipType.GENERATED_FROM, spdx_id("dataset", dataset.name)))
    for package in packages:
        document.packages.append(_python_package(package))
        document.relationships.append(
            Relationship(MODEL_ID, RelationshipType.DEPENDS_ON, spdx_id("pypi", package.name)))
    return document


def _dataset_package(dataset: Dataset) -> Package:
    checksums = [Checksum(ChecksumAlgorithm.SHA256, dataset.sha256)] if dataset.sha256 else []
    return Package(spdx_id=spdx_id("dataset", dataset.name), name=dataset.name, download_location=SpdxNoAssertion(),
                   files_analyzed=False, primary_package_purpose=PackagePurpose.OTHER, checksums=checksums,
                   license_declared=_license(dataset.license),
                   comment="training data; preprocessing: " + (" -> ".join(dataset.preprocessing) or "none declared")
                           + f"; source: {dataset.source or 'not declared'}")


def _python_package(package: PythonPackage) -> Package:
    reference = ExternalPackageRef(ExternalPackageRefCategory.PACKAGE_MANAGER, "purl", package.purl)
    return Package(spdx_id=spdx_id("pypi", package.name), name=package.name, version=package.version,
                   download_location=SpdxNoAssertion(), files_analyzed=False,
                   primary_package_purpose=PackagePurpose.LIBRARY, external_references=[reference],
                   license_declared=_license(package.license))


def _license(text: str | None):
    """A valid SPDX license expression, else NOASSERTION (package metadata holds free text)."""
    if not text:
        return SpdxNoAssertion()
    try:
        expression = spdx_licensing.parse(text)
    except Exception:  # noqa: BLE001 - license-expression raises several unrelated types
        return SpdxNoAssertion()
    if expression is None or spdx_licensing.unknown_license_keys(expression):
        return SpdxNoAssertion()
    return expression
