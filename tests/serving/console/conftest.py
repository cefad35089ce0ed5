"""One real ``mcp2026 serve`` for the console tests: the default model, tenant keys (an admin, a
user, a user with a tight rate limit, one allowed a single request a minute), the gRPC API, the
audit trail on SQLite with capture, the shipped policies plus a rule that redacts e-mail addresses
from prompts, and signing keys."""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mcp.serving.tenants import hash_key

ADMIN, USER, LIMITED = "console-admin-key", "console-acme-key", "console-small-key"
NARROW = "console-narrow-key"  # tenant narrow: one request a minute (the gRPC refusal test's)
REDACT_EMAIL_INPUT = """package mcp.input

import rego.v1

redact contains {"rule": "input.redact_email", "reason": "addresses never reach the model", "kinds": ["email"]} if {
	some f in input.findings
	f.kind == "email"
}
"""


@dataclass(frozen=True)
class ConsoleServer:
    url: str
    audit_db: Path
    model_file: Path
    server: object  # conftest.ServerProcess
    grpc_address: str  # host:port of its gRPC API
    admin_key: str = ADMIN  # tenant ops, role admin
    user_key: str = USER  # tenant acme
    limited_key: str = LIMITED  # tenant small, 2 requests a minute
    narrow_key: str = NARROW  # tenant narrow, 1 request a minute

    def get(self, path: str, key: str | None = ADMIN, **kwargs) -> httpx.Response:
        return self.call("GET", path, key, **kwargs)

    def post(self, path: str, key: str | None = ADMIN, **kwargs) -> httpx.Response:
        return self.call("POST", path, key, **kwargs)

    def call(self, method: str, path: str, key: str | None, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.request(method, self.url + path, headers=headers, timeout=120, **kwargs)

    def chat(self, text: str, key: str = USER, user: str = "alice", max_tokens: int = 8) -> httpx.Response:
        return self.post("/v1/chat/completions", key, json={
            "model": "smollm2", "max_tokens": max_tokens, "temperature": 0.0, "user": user,
            "messages": [{"role": "user", "content": text}]})


@pytest.fixture(scope="package")
def console_server(start_server, smollm2_auto_mcp, tmp_path_factory) -> ConsoleServer:
    from mcp.governance.policy.bundle import SHIPPED
    from mcp.governance.signing.keys import init_keys

    folder = tmp_path_factory.mktemp("console")
    keys = init_keys(folder / "keys")
    shutil.copytree(SHIPPED, folder / "policies")
    (folder / "policies" / "redact_email.rego").write_text(REDACT_EMAIL_INPUT)
    grpc_port = _free_port()
    server = start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {
            "models": [{"name": "smollm2", "source": str(smollm2_auto_mcp), "version": "1"}],
            "grpc": {"enabled": True, "port": grpc_port},
            "tenants": [{"name": "ops", "key_sha256": [hash_key(ADMIN)], "role": "admin"},
                        {"name": "acme", "key_sha256": [hash_key(USER)]},
                        {"name": "small", "key_sha256": [hash_key(LIMITED)], "requests_per_minute": 2},
                        {"name": "narrow", "key_sha256": [hash_key(NARROW)], "requests_per_minute": 1}],
            "admin_models": {"allow_any_path": True},
            "governance": {"audit_url": f"sqlite:///{folder / 'audit.db'}", "audit_key_file": str(folder / "audit.key"),
                           "capture": True, "policy_bundle": str(folder / "policies")},
        },
        "signing": {"key_file": str(keys.signing_key), "cert_file": str(keys.signing_cert)},
    }, keep=True)
    yield ConsoleServer(server.url, folder / "audit.db", Path(smollm2_auto_mcp), server, f"127.0.0.1:{grpc_port}")
    server.stop()  # the package's tests are done with it


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
