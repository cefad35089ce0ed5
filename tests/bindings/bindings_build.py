"""How the binding tests build libmcp and the C test programs, and the environment a child
process needs to run this checkout (its src first on the embedded interpreter's path)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "bindings" / "c"
PYTHON = ROOT / ".venv" / "bin" / "python"


def child_env(**extra: str) -> dict[str, str]:
    """This checkout's src first on the embedded interpreter's path, as pytest has it."""
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def build_libmcp(out: Path, *flags: str) -> Path:
    subprocess.run(["bash", str(ROOT / "bindings" / "c" / "build.sh"), str(PYTHON), str(out), *flags],
                   check=True, capture_output=True, text=True)
    return out


def compile_program(name: str, libdir: Path, out: Path, *flags: str) -> Path:
    binary = out / name
    subprocess.run(["cc", "-std=gnu11", "-g", "-Wall", "-Wextra", "-Werror", *flags, f"-I{ROOT / 'include'}",
                    str(PROGRAMS / f"{name}.c"), f"-L{libdir}", "-lmcp", f"-Wl,-rpath,{libdir}", "-lpthread",
                    "-o", str(binary)], check=True, capture_output=True, text=True)
    return binary
