"""Fixtures of the C and Go binding tests: libmcp built by the Makefile's own target, the C test
programs compiled against it.

gcc builds the programs (the native kernels need it too); Go comes from Debian's golang-go,
which `make test` installs through .ci/go.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from bindings_build import ROOT, compile_program


@pytest.fixture(scope="session")
def libmcp() -> Path:
    """build/libmcp, brought up to date by `make libmcp` (what the README's build runs)."""
    subprocess.run(["make", "-s", "-C", str(ROOT), "libmcp"], check=True, capture_output=True, text=True)
    return ROOT / "build" / "libmcp"


@pytest.fixture(scope="session")
def c_programs(libmcp: Path, tmp_path_factory: pytest.TempPathFactory):
    """A function compiling one of tests/bindings/c/*.c against libmcp."""
    out = tmp_path_factory.mktemp("c-programs")
    return lambda name: compile_program(name, libmcp, out)


@pytest.fixture(scope="session")
def go_tool() -> str:
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is missing: apt-get install golang-go (bash .ci/go does it)")
    return go
