"""Fixtures of the deploy/ tests: the real tools (promtool, prometheus, hadolint) and a real
Prometheus scraping a running ``mcp2026 serve``.

A tool that is missing fails the test in CI (``CI`` set, as .ci/run runs; .ci/ops-tools
installs the tools) and skips it elsewhere with what to install, as the PostgreSQL tests fail
when their server is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"


def require_tool(name: str, install: str) -> str:
    """The tool's path; a clear failure in CI, a skip elsewhere, when it is not installed."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed ({install}; `bash .ci/ops-tools` does it)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def promtool() -> str:
    return require_tool("promtool", "Debian: apt-get install prometheus")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PrometheusProcess:
    url: str
    process: subprocess.Popen
    log_path: Path

    def query(self, expr: str) -> dict:
        """/api/v1/query's JSON, whatever its status (a bad expression answers 400 with an error)."""
        return httpx.get(self.url + "/api/v1/query", params={"query": expr}, timeout=10.0).json()

    def wait_for(self, expr: str, timeout_s: float = 60.0) -> list[dict]:
        """Query until the expression has a sample (scrapes and rule evaluations take a few seconds)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            answer = self.query(expr)
            if answer["status"] == "success" and answer["data"]["result"]:
                return answer["data"]["result"]
            time.sleep(0.5)
        raise AssertionError(f"Prometheus had no sample of {expr!r} in {timeout_s} s; last answer {answer}\n"
                             f"{self.log_path.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="session")
def served_tiny(start_server, tiny_mcp: Path):
    """``mcp2026 serve`` with the tiny model as ``tiny`` version 1."""
    return start_server({"serving": {"service_name": "mcp2026",
                                     "models": [{"name": "tiny", "source": str(tiny_mcp), "version": "1"}]}}, keep=True)


@pytest.fixture(scope="session")
def prometheus(served_tiny, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    """A real Prometheus on 127.0.0.1 scraping ``served_tiny`` every second, with our rules loaded."""
    binary = require_tool("prometheus", "Debian: apt-get install prometheus")
    folder = tmp_path_factory.mktemp("prometheus")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(DEPLOY / "prometheus" / name) for name in ("recording-rules.yaml", "alerting-rules.yaml")],
        "scrape_configs": [{"job_name": "mcp2026", "static_configs": [
            {"targets": [served_tiny.url.removeprefix("http://")]}]}],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    log_path = folder / "prometheus.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([binary, f"--config.file={folder / 'prometheus.yml'}",
                                    f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                                   stdout=log, stderr=subprocess.STDOUT)
    server = PrometheusProcess(f"http://127.0.0.1:{port}", process, log_path)
    try:
        _wait_ready(server)
        yield server
    finally:
        process.terminate()
        process.wait(30)


def _wait_ready(server: PrometheusProcess, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"prometheus exited with {server.process.returncode}:\n"
                               f"{server.log_path.read_text(errors='replace')}")
        try:
            if httpx.get(server.url + "/-/ready", timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"prometheus was not ready in {timeout_s} s:\n{server.log_path.read_text(errors='replace')}")
