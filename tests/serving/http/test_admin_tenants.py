"""Admin endpoints (swap a version under concurrent load, nothing dropped), tenant keys, roles and
rate limits, on a real server process. A tiny random-weight model: what is tested is routing,
lifetimes and limits, which do not depend on the text."""

from __future__ import annotations

import threading
import time

import httpx
import openai
import pytest

from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
ADMIN, USER, LIMITED = "admin-key-1", "user-key-1", "limited-key-1"
PROMPT = {"prompt": "a b c", "max_tokens": 4, "temperature": 0.0, "extra_body": {"ignore_eos": True}}


@pytest.fixture(scope="module")
def server(start_server, tiny_mcp):
    return start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        # two sequences a step, and a critical TTFT no request can meet: admission control refuses
        # critical requests once more than one waits (medium ones keep their 5 s target)
        "scheduler": {"max_num_seqs": 2, "max_waiting": 1, "slo_targets": {"critical": {"ttft_s": 0.001}}},
        "serving": {
            "models": [{"name": "tiny", "source": str(tiny_mcp), "version": "1"}],
            "tenants": [
                {"name": "ops", "key_sha256": [hash_key(ADMIN)], "role": "admin"},
                {"name": "acme", "key_sha256": [hash_key(USER)]},
                {"name": "small", "key_sha256": [hash_key(LIMITED)], "requests_per_minute": 3},
            ],
        },
    })


def _client(server, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def _admin(server, method: str, path: str, key: str = ADMIN, **kwargs) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {key}"}, timeout=120,
                         **kwargs)


def test_keys_and_roles(server):
    with pytest.raises(openai.AuthenticationError, match="matches no tenant"):
        _client(server, "wrong").completions.create(model="tiny", **PROMPT)
    assert httpx.post(server.url + "/v1/completions", json={"model": "tiny", "prompt": "a"}).status_code == 401
    assert _client(server, USER).completions.create(model="tiny", **PROMPT).usage.completion_tokens == 4
    forbidden = _admin(server, "GET", "/admin/models", key=USER)
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "forbidden"
    listing = _admin(server, "GET", "/admin/models").json()["data"]
    assert [(v["name"], v["version"], v["current"]) for v in listing] == [("tiny", "1", True)]


def test_x_tenant_id_must_name_the_keys_tenant_as_over_grpc(server):
    def post(tenant_id: str) -> httpx.Response:
        return httpx.post(server.url + "/v1/completions", timeout=120, json={"model": "tiny", "prompt": "a", "max_tokens": 1},
                          headers={"Authorization": f"Bearer {USER}", "x-tenant-id": tenant_id})

    assert post("acme").status_code == 200
    other = post("ops")
    assert other.status_code == 403 and "x-tenant-id 'ops' does not match the API key's tenant 'acme'" in \
        other.json()["error"]["message"]
    malformed = post("a/b")
    assert malformed.status_code == 400 and malformed.json()["error"]["param"] == "x-tenant-id"
    assert "header x-tenant-id 'a/b' is malformed" in malformed.json()["error"]["message"]


def test_requests_per_minute_is_a_429_with_retry_after(server):
    client = _client(server, LIMITED)
    for _ in range(3):
        client.completions.create(model="tiny", **PROMPT)
    with pytest.raises(openai.RateLimitError) as caught:
        client.completions.create(model="tiny", **PROMPT)
    assert 1 <= int(caught.value.response.headers["retry-after"]) <= 60
    assert "3 requests per minute" in caught.value.body["message"]
    assert _client(server, USER).completions.create(model="tiny", **PROMPT)  # other tenants are not limited


def test_swap_under_concurrent_load_drops_nothing(server, tiny_mcp):
    client = _client(server, USER)
    served: list[tuple[float, str]] = []  # (when the request was sent, the version that answered)
    failures: list[BaseException] = []
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            try:
                sent = time.monotonic()
                stream = client.completions.create(model="tiny", stream=True, **PROMPT)
                chunks = list(stream)
                assert chunks[-1].choices[0].finish_reason == "length"
                served.append((sent, chunks[-1].model))
            except BaseException as exc:  # noqa: BLE001 - counted below
                failures.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        loaded = _admin(server, "POST", "/admin/models", json={"name": "tiny", "source": str(tiny_mcp),
                                                                "version": "2"})
        swapped = time.monotonic()
        assert loaded.status_code == 200, loaded.text
        assert loaded.json()["current"] and loaded.json()["load_to_ready_s"] > 0
        before = len(served)
        while len(served) < before + 8 and not failures:
            threading.Event().wait(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []
    versions = [version for _, version in served]
    assert "tiny:1" in versions and "tiny:2" in versions
    # every request sent once the load answered went to v2; those in flight on v1 finished there
    assert {version for sent, version in served if sent > swapped} == {"tiny:2"}
    listing = _admin(server, "GET", "/admin/models").json()["data"]
    assert [(v["version"], v["current"]) for v in listing] == [("2", True)]


def test_admin_errors(server, tiny_mcp):
    unknown = _admin(server, "POST", "/admin/models/tiny/swap", json={"version": "9"})
    assert unknown.status_code == 404 and "not loaded" in unknown.json()["error"]["message"]
    missing = _admin(server, "POST", "/admin/models", json={"name": "x", "source": str(tiny_mcp.parent / "no-such.mcp")})
    assert missing.status_code == 404 and "not found" in missing.json()["error"]["message"]
    outside = _admin(server, "POST", "/admin/models", json={"name": "x", "source": "/no/such/file.mcp"})
    assert outside.status_code == 403 and "outside the folders" in outside.json()["error"]["message"]
    duplicate = _admin(server, "POST", "/admin/models", json={"name": "tiny", "source": str(tiny_mcp),
                                                               "version": "2"})
    assert duplicate.status_code == 400 and "already loaded" in duplicate.json()["error"]["message"]
    assert _admin(server, "DELETE", "/admin/models/nothing").status_code == 404


def test_admission_control_refusal_is_a_429_with_retry_after(server):
    body = {"model": "tiny", "prompt": "a b", "max_tokens": 40, "ignore_eos": True}
    headers = {"Authorization": f"Bearer {USER}", "x-sla-class": "critical"}
    responses: list[httpx.Response] = []

    def send() -> None:
        responses.append(httpx.post(server.url + "/v1/completions", json=body, headers=headers, timeout=120))

    threads = [threading.Thread(target=send) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = [r for r in responses if r.status_code == 429]
    assert refused and all(r.status_code in (200, 429) for r in responses)
    assert all(int(r.headers["retry-after"]) >= 1 and r.json()["error"]["code"] == "over_capacity" for r in refused)
    assert _client(server, USER).completions.create(model="tiny", **PROMPT).usage.completion_tokens == 4


def test_attestation_needs_a_key_and_says_when_it_is_off(server):
    nonce = {"nonce": "ab" * 16}
    assert httpx.get(server.url + "/attestation", params=nonce).status_code == 401
    off = _admin(server, "GET", "/attestation", key=USER, params=nonce)
    assert off.status_code == 404 and off.json()["error"]["code"] == "attestation_off"
    assert "add an attestation: section" in off.json()["error"]["message"]
