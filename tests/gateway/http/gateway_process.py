"""A real ``mcp2026 gateway`` subprocess on a free loopback port, the keys its tenants use, and
the canary tests' traffic: ever new users until a rollout has ended, and the arms that answer."""

from __future__ import annotations

import asyncio
import json
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
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GatewayProcess:
    """``launcher`` (e.g. ``ip netns exec NAME``) runs it on a host of its own, bound to ``host``."""

    def __init__(self, config: dict, rules: dict, folder: Path, timeout_s: float = 60.0,
                 env: dict[str, str] | None = None, launcher: tuple[str, ...] = (), host: str = "127.0.0.1") -> None:
        self.port = free_port()
        gateway = {"tenants": TENANTS, **config.get("gateway", {}), "host": host, "port": self.port}
        self.config_path, self.rules_path = folder / "gateway.yaml", folder / "routes.yaml"
        self.config_path.write_text(yaml.safe_dump({**config, "gateway": gateway}))
        self.rules_path.write_text(yaml.safe_dump(rules, sort_keys=False))
        self.url = f"http://{host}:{self.port}"
        self.log_path = folder / "gateway.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [*launcher, sys.executable, "-m", "mcp.commands.cli", "gateway", "--config", str(self.config_path),
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


async def traffic_until_rollout_ends(url: str, model: str, rollout_id: int, deadline_s: float = 90.0) -> dict:
    """Requests from ever new users, 8 at a time, until the rollout has ended; its final state."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        stop = asyncio.Event()

        async def user_loop(worker: int) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                r = await client.post("/v1/completions", headers={"authorization": f"Bearer {FREE_KEY}"},
                                      json={"model": model, "prompt": "hi", "max_tokens": 1, "user": f"w{worker}-{n}"})
                assert r.status_code == 200, r.text

        workers = [asyncio.create_task(user_loop(w)) for w in range(8)]
        started = time.monotonic()
        try:
            while time.monotonic() - started < deadline_s:
                state = (await client.get(f"/admin/rollouts/{rollout_id}", headers=ADMIN)).json()
                if state["status"] != "running":
                    return state
                await asyncio.sleep(0.3)
            raise AssertionError(f"rollout still running after {deadline_s} s: {state}")
        finally:
            stop.set()
            await asyncio.gather(*workers)


def arms_served(url: str, model: str, num: int = 10) -> set[str]:
    return {httpx.post(url + "/v1/completions", headers={"authorization": f"Bearer {FREE_KEY}"}, timeout=30,
                       json={"model": model, "prompt": "hi", "max_tokens": 1, "user": f"later-{i}"}).headers["x-mcp-arm"]
            for i in range(num)}


def error_events(events: list[str]) -> list[int]:
    """The indexes of a stream's error events (data lines of a JSON object with "error"; a token
    whose text is "error" is not one)."""
    return [i for i, e in enumerate(events) if e != "[DONE]" and "error" in json.loads(e)]
