"""Registry fixtures: a fresh registry database per test, SQLite and PostgreSQL alike.

PostgreSQL is ``$MCP_TEST_POSTGRES_URL`` (default: postgres on 127.0.0.1:5432, database
``test``, as on the development machines and in CI, where ``.ci/run`` makes sure it runs).
Each test gets its own database ``mcp_registry_test_<random>``, dropped afterwards. An
unreachable server makes those tests fail, never skip.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from mcp.gateway.registry.records import ArtifactMetadata
from mcp.gateway.registry.registry import Registry

sys.path.insert(0, str(Path(__file__).parent))
from gateway_artifacts import write_hf_folder, write_onnx, write_triton_repo  # noqa: E402

POSTGRES_ADMIN_URL = os.environ.get("MCP_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def registry_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """A URL of an empty registry database of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'registry.db'}"
        return
    with postgres_database() as url:
        yield url


@pytest.fixture
def registry(registry_url: str) -> Iterator[Registry]:
    with Registry.open(registry_url, actor="tester") as opened:
        yield opened


class postgres_database:
    """Create a database of our own on the test server, drop it on exit."""

    def __enter__(self) -> str:
        self.name = f"mcp_registry_test_{uuid.uuid4().hex[:12]}"
        self.admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT",
                                   connect_args={"connect_timeout": 5})
        try:
            with self.admin.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{self.name}"'))
        except Exception as exc:
            pytest.fail(f"PostgreSQL at {POSTGRES_ADMIN_URL} is not reachable ({exc}); "
                        "start it (.ci/run does) or set MCP_TEST_POSTGRES_URL", pytrace=False)
        return self.admin.url.set(database=self.name).render_as_string(hide_password=False)

    def __exit__(self, *exc_info: object) -> None:
        with self.admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture
def artifact() -> ArtifactMetadata:
    """Metadata for tests that do not care about the artifact itself."""
    return ArtifactMetadata(uri="file:///models/m.gguf", format="gguf", sha256="ab" * 32, size_bytes=1234,
                            name="m", architecture="llama", parameter_count=1000, quantization="Q4_1",
                            context_length=2048, license="apache-2.0", lineage={"general.name": "m"})


@pytest.fixture
def hf_folder(tmp_path: Path) -> Path:
    return write_hf_folder(tmp_path)


@pytest.fixture
def onnx_file(tmp_path: Path) -> Path:
    return write_onnx(tmp_path / "tiny.onnx")


@pytest.fixture
def make_onnx():
    """make_onnx(path, quantized=False) writes a tiny checked ONNX model."""
    return write_onnx


@pytest.fixture
def triton_repo(tmp_path: Path) -> Path:
    return write_triton_repo(tmp_path)
