"""The floors (docs/architecture.md): each package imports only the ones below it, checked by
import-linter, the maintained tool, against the contracts in pyproject.toml.

The tool runs in a child interpreter started with ``-S`` and a PYTHONPATH of the tree under test
and the site-packages holding import-linter: no ``.pth`` file (the editable install's) can add a
second ``mcp`` portion, so the tool reads exactly that tree. (It names old module paths on purpose: rewrite_imports: skip.)
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

importlinter = pytest.importorskip("importlinter", reason="the test extra installs import-linter")

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    site_packages = Path(importlinter.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(site_packages)])}
    return subprocess.run([sys.executable, "-S", "-c", LINT], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def copy_tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "src" / "mcp", tmp_path / "src" / "mcp",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_every_floor_imports_only_the_floors_below_it() -> None:
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"Contracts: \d+ kept, 0 broken", run.stdout), run.stdout
    assert "floors: base < modelfile < engine" in run.stdout.replace("\n", "")


def test_an_upward_import_inside_a_function_breaks_the_floors(tmp_path: Path) -> None:
    """The engine's sampler reaching up into serving, lazily, as the old cycles did."""
    root = copy_tree(tmp_path)
    sampler = root / "src" / "mcp" / "engine" / "sampler.py"
    sampler.write_text(sampler.read_text() + "\n\ndef _planted():\n    from mcp.serving.state import ServerState\n"
                       "\n    return ServerState\n")
    run = lint_imports(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Contracts: 2 kept, 2 broken" in run.stdout, run.stdout
    assert "mcp.engine.sampler -> mcp.serving.state" in run.stdout, run.stdout
    assert "the engine knows nothing of serving, the gateway or governance BROKEN" in run.stdout


def test_governance_importing_a_web_framework_breaks_its_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    plane = root / "src" / "mcp" / "governance" / "plane.py"
    plane.write_text(plane.read_text() + "\n\nimport fastapi  # planted\n")
    run = lint_imports(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "governance runs without a web or RPC framework and without the gateway BROKEN" in run.stdout
    assert "mcp.governance.plane -> fastapi" in run.stdout, run.stdout


@pytest.mark.parametrize("old", ["mcp.runtime.errors", "mcp.runtime.arguments", "mcp.runtime.result",
                                 "mcp.runtime.watch", "mcp.runtime.config", "mcp.runtime.serving_config",
                                 "mcp.runtime.isolation_config", "mcp.runtime.signing_config",
                                 "mcp.runtime.attestation_config", "mcp.runtime.paths"])
def test_the_sdk_keeps_the_old_paths_of_what_moved_down(old: str) -> None:
    from mcp.runtime.moved import MOVED

    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert MOVED[old].startswith(("mcp.base.", "mcp.config."))


PACKAGES = ("base", "modelfile", "engine", "compiler", "config", "governance", "runtime", "backends", "ops",
            "serving", "gateway", "commands")


def doc_texts() -> list[str]:
    paths = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py")]
    return [p.read_text() for p in paths if p.is_file()]


def test_every_import_the_docs_show_works() -> None:
    """``from mcp.x import Name`` in docs/, README.md and examples/: each name is there."""
    pattern = re.compile(r"\bfrom (mcp(?:\.\w+)+) import (\w+(?:, \w+)*)")
    found = {(m.group(1), name.strip()) for text in doc_texts() for m in pattern.finditer(text)
             for name in m.group(2).split(",")}
    assert len(found) > 10
    missing = [f"{module}.{name}" for module, name in sorted(found) if not resolves(f"{module}.{name}")]
    assert not missing, missing


def test_every_dotted_name_the_docs_give_resolves() -> None:
    """``mcp.engine.hooks``, ``mcp.modelfile.reader.open_model``: a module, or a name in one."""
    pattern = re.compile(rf"(?<![\w./-])mcp\.(?:{'|'.join(PACKAGES)})(?:\.\w+)*")
    found = {m.group(0) for text in doc_texts() for m in pattern.finditer(text)}
    assert len(found) > 20
    missing = sorted(name for name in found if not resolves(name))
    assert not missing, missing


def resolves(dotted: str) -> bool:
    """The longest importable prefix, then attributes for the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False
