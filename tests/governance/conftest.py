"""Fixtures of the governance tests: audit databases of each kind (SQLite file, a PostgreSQL
database of their own). The tiny model and the server launcher come from tests/conftest.py."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp.governance.audit.keys import AuditKeys
from mcp.governance.audit.log import AuditLog

TESTS = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_gateway = _load("gateway_fixtures", TESTS / "gateway" / "conftest.py")
postgres_database = _gateway.postgres_database


@pytest.fixture(params=("sqlite", "postgresql"))
def audit_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'audit.db'}"
        return
    with postgres_database() as url:
        yield url


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "audit.key"
    AuditKeys.from_file(path)
    return path


@pytest.fixture
def audit_log(audit_url: str, key_file: Path) -> Iterator[AuditLog]:
    log = AuditLog.open(audit_url, str(key_file))
    yield log
    log.close()


@pytest.fixture(scope="session")
def openssl() -> str:
    """The openssl tool's path: a clear failure in CI, a skip elsewhere, when it is not installed."""
    import os
    import shutil

    path = shutil.which("openssl")
    if path is None:
        message = "openssl is not installed (Debian: apt-get install openssl; `bash .ci/openssl` does it)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path
