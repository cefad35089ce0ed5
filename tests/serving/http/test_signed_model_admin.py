"""A server under ``runtime.require_signed_models``: the admin load API refuses an unsigned
model with a 403 naming the cause, and loads a signed one (a real server process)."""

from __future__ import annotations

import shutil

import httpx
import pytest

from mcp.governance.signing.keys import init_keys, load_identity
from mcp.governance.signing.models import sign_model
from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
ADMIN = "admin-key-1"


def test_admin_load_refuses_an_unsigned_model(start_server, tiny_mcp, tmp_path):
    keys = init_keys(tmp_path / "keys")
    signed, unsigned = (shutil.copy(tiny_mcp, tmp_path / name) for name in ("signed.mcp", "unsigned.mcp"))
    sign_model(signed, load_identity(keys.signing_key, keys.signing_cert))
    server = start_server({
        "runtime": {"device": "cpu", "num_threads": 1, "require_signed_models": True,
                    "trusted_ca": str(keys.ca_cert)},
        "serving": {"models": [{"name": "tiny", "source": str(signed), "version": "1"}],
                    "tenants": [{"name": "ops", "key_sha256": [hash_key(ADMIN)], "role": "admin"}]},
    })
    headers = {"Authorization": f"Bearer {ADMIN}"}
    refused = httpx.post(server.url + "/admin/models", headers=headers, timeout=120,
                         json={"name": "other", "source": str(unsigned)})
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "model_signature_refused" and "unsigned.mcp is not signed" in error["message"]
    accepted = httpx.post(server.url + "/admin/models", headers=headers, timeout=120,
                          json={"name": "tiny", "source": str(signed), "version": "2"})
    assert accepted.status_code == 200 and accepted.json()["current"] is True
