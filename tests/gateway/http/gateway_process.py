"""A real ``mcp2026 gateway`` subprocess on a free loopback port, and the keys its tenants use."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from mcp.serving.tenants import hash_key

ADMIN_KEY, ACME_KEY, FREE_KEY = "admin-key-0123", "acme-key-4567", "free-key-89ab"
TENANTS = [{"name": "ops", "key_sha256": [hash_key(ADMIN_KEY)], "role": "admin"},
           {"name": "acme", "key_sha256": [hash_key(ACME_KEY)]},
           {"name": "free", "key_sha256": [hash_key(FREE_KEY)]}]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GatewayProcess:
    def __init__(self, config: dict, rules: dict, folder: Path, timeout_s: float = 60.0,
                 env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        gateway = {"tenants": TENANTS, **config.get("gateway", {}), "host": "127.0.0.1", "port": self.port}
        self.config_path, self.rules_path = folder / "gateway.yaml", folder / "routes.yaml"
        self.config_path.write_text(yaml.safe_dump({**config, "gateway": gateway}))
        self.rules_path.write_text(yaml.safe_dump(rules, sort_keys=False))
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "gateway.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp.commands.cli", "gateway", "--config", str(self.config_path),
             "--rules", str(self.rules_path)], stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})})
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited with {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the gateway was not ready in {timeout_s} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode
