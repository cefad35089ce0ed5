"""Fetching a server's evidence: ``GET /attestation?nonce=...``."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from mcp.governance.attestation.errors import AttestationError


def fetch_evidence(url: str, nonce: str, api_key: str | None = None, timeout_s: float = 30.0) -> dict:
    target = f"{url.rstrip('/')}/attestation?{urllib.parse.urlencode({'nonce': nonce})}"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(target, headers=headers), timeout=timeout_s) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise AttestationError(f"{target} answered {exc.code}: {_message(exc)}") from None
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
        raise AttestationError(f"cannot get evidence from {target} ({exc})") from None


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read())["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return exc.reason
