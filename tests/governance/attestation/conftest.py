"""A real software TPM (swtpm) on loopback for the TPM tests, started per test and torn down."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL = "apt-get install swtpm swtpm-tools libtss2-dev (or bash .ci/tpm), then pip install 'mcp2026[attestation]'"


def _free_port_pair() -> int:
    """A port P with P+1 free too (swtpm's server and control ports)."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two consecutive free ports on 127.0.0.1")


def _wait_listening(port: int, process: subprocess.Popen, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"swtpm exited with {process.returncode}: {process.stderr.read().decode()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"swtpm did not listen on 127.0.0.1:{port} in {timeout_s} s")


@pytest.fixture
def swtpm(tmp_path: Path) -> Iterator[str]:
    """The TCTI string of a fresh swtpm (TPM 2.0, started up), e.g. ``swtpm:host=127.0.0.1,port=P``."""
    if shutil.which("swtpm") is None:
        pytest.skip(f"swtpm is not installed; {INSTALL}")
    pytest.importorskip("tpm2_pytss", reason=f"tpm2-pytss is not installed; {INSTALL}")
    state = tmp_path / "tpm-state"
    state.mkdir()
    port = _free_port_pair()
    process = subprocess.Popen(
        ["swtpm", "socket", "--tpm2", "--server", f"type=tcp,port={port},bindaddr=127.0.0.1",
         "--ctrl", f"type=tcp,port={port + 1},bindaddr=127.0.0.1", "--tpmstate", f"dir={state}",
         "--flags", "startup-clear"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_listening(port, process)
        yield f"swtpm:host=127.0.0.1,port={port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
