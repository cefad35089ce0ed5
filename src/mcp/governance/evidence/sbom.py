"""SBOMs of a model release: the runtime (every installed Python distribution, read with
``importlib.metadata``), the model artifact, what it was compiled from, and its datasets.

Two formats of the same inventory, each checked before it is written: SPDX 2.3 JSON
(``spdx-tools`` and its validator) and CycloneDX 1.6 JSON (``cyclonedx-python-lib`` and the
CycloneDX JSON schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import distributions
from io import StringIO

from mcp.governance.errors import EvidenceError
from mcp.modelfile.spec import Dataset, Lineage

TOOL = "mcp2026"
_SPDX_ID_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


@dataclass(frozen=True)
class PythonPackage:
    name: str
    version: str
    license: str | None

    @property
    def purl(self) -> str:
        return f"pkg:pypi/{self.name.lower().replace('_', '-')}@{self.version}"


@dataclass(frozen=True)
class ModelArtifact:
    """The released ``.mcp`` file and where it came from."""

    name: str
    file_name: str
    sha256: str
    size_bytes: int
    lineage: Lineage


def runtime_packages() -> list[PythonPackage]:
    """Every distribution importable in this environment, once per name, sorted."""
    found: dict[str, PythonPackage] = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name and name.lower() not in found:
            license_text = dist.metadata.get("License-Expression") or dist.metadata.get("License")
            found[name.lower()] = PythonPackage(name, dist.version, _one_line(license_text))
    return sorted(found.values(), key=lambda p: p.name.lower())


def spdx_json(model: ModelArtifact, packages: list[PythonPackage], created: datetime, namespace: str) -> str:
    """The SPDX 2.3 document as JSON; an ``EvidenceError`` lists what its validator found."""
    from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document
    from spdx_tools.spdx.writer.json.json_writer import write_document_to_stream

    from mcp.governance.evidence.spdx_document import build_document

    document = build_document(model, packages, created, namespace)
    problems = validate_full_spdx_document(document, "SPDX-2.3")
    if problems:
        raise EvidenceError("the SPDX document does not validate: "
                            + "; ".join(p.validation_message for p in problems[:5]))
    stream = StringIO()
    write_document_to_stream(document, stream, validate=False)
    return stream.getvalue()


def cyclonedx_json(model: ModelArtifact, packages: list[PythonPackage]) -> str:
    """The CycloneDX 1.6 BOM as JSON, checked against the CycloneDX JSON schema."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    from packageurl import PackageURL

    bom = Bom()
    artifact = Component(name=model.name, type=ComponentType.MACHINE_LEARNING_MODEL, bom_ref="model",
                         version=model.sha256[:12], description=f"{model.file_name}, compiled by "
                         f"mcp2026 {model.lineage.compiler_version} from {model.lineage.source_name}",
                         hashes=[HashType(alg=HashAlgorithm.SHA_256, content=model.sha256)])
    bom.metadata.component = artifact
    for dataset in model.lineage.datasets:
        bom.components.add(_cyclonedx_dataset(dataset, HashType, HashAlgorithm, Component, ComponentType))
    libraries = [Component(name=package.name, version=package.version, type=ComponentType.LIBRARY,
                           bom_ref=package.purl, purl=PackageURL.from_string(package.purl)) for package in packages]
    for library in libraries:
        bom.components.add(library)
    bom.register_dependency(artifact, libraries)
    text = JsonV1Dot6(bom).output_as_string(indent=2)
    problem = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if problem is not None:
        raise EvidenceError(f"the CycloneDX document does not validate: {problem}")
    return text


def _cyclonedx_dataset(dataset: Dataset, HashType, HashAlgorithm, Component, ComponentType):
    hashes = [HashType(alg=HashAlgorithm.SHA_256, content=dataset.sha256)] if dataset.sha256 else []
    steps = " -> ".join(dataset.preprocessing)
    return Component(name=dataset.name, type=ComponentType.DATA, bom_ref=f"dataset:{dataset.name}", hashes=hashes,
                     description=f"training data; source {dataset.source or 'not declared'}; license "
                                 f"{dataset.license or 'not declared'}; preprocessing {steps or 'none declared'}")


def spdx_id(kind: str, name: str) -> str:
    return f"SPDXRef-{kind}-{_SPDX_ID_UNSAFE.sub('-', name)}"


def _one_line(text: str | None) -> str | None:
    if not text:
        return None
    line = text.strip().splitlines()[0].strip()
    return line[:200] or None
