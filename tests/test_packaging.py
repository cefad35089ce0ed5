"""pyproject.toml's ``all`` extra: every extra that needs no system library and no compiler, so
that ``pip install 'mcp2026[all]'`` (the README's line) installs them all; the rest are named."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# attestation: tpm2-pytss builds against libtss2-dev; llamacpp*: compiles llama.cpp; test: the suite's own
LEFT_OUT = {"attestation", "llamacpp", "llamacpp-server", "test", "all"}


def test_all_names_every_extra_that_needs_no_system_library() -> None:
    [spec] = PROJECT["optional-dependencies"]["all"]
    match = re.fullmatch(r"mcp2026\[([a-z,-]+)\]", spec)
    assert match, spec
    assert set(match.group(1).split(",")) == set(PROJECT["optional-dependencies"]) - LEFT_OUT


def test_the_readme_names_the_all_extra() -> None:
    assert "pip install 'mcp2026[all]'" in (ROOT / "README.md").read_text()
