"""``/console`` over HTTP on a real server with the default model: the page and its headers, who
may see what, the live overview stream after real requests (HTTP 429s and gRPC RESOURCE_EXHAUSTED
told apart), each version's memory, tenants, audit and compliance."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import grpc
import httpx
import pytest
from mcp.serving.console.routes import CSP
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
ADMIN, USER, LIMITED = "console-admin-key", "console-acme-key", "console-small-key"  # conftest.py's tenants
NARROW = "console-narrow-key"


def test_the_keys_are_the_servers(console_server):
    assert (console_server.admin_key, console_server.user_key, console_server.limited_key) == (ADMIN, USER, LIMITED)
    assert console_server.narrow_key == NARROW


def test_the_page_and_assets_carry_a_strict_csp_and_load_nothing_from_outside(console_server):
    page = console_server.get("/console", key=None)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CSP and "script-src 'self'" in CSP and "unsafe" not in CSP
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    assert "http://" not in page.text and "https://" not in page.text and "<script>" not in page.text
    for name in ("console.js", "charts.js", "pages.js", "console.css"):
        asset = console_server.get(f"/console/assets/{name}", key=None)
        assert asset.status_code == 200 and asset.headers["content-security-policy"] == CSP
        assert "http://" not in asset.text and "https://" not in asset.text
    missing = console_server.get("/console/assets/evil.js", key=None)
    assert missing.status_code == 404 and "the console has no asset 'evil.js'" in missing.json()["error"]["message"]
    assert console_server.get("/console/assets/..%2F..%2Fhttp%2Fapp.py", key=None).status_code == 404


def test_whoami_names_the_keys_tenant_and_refuses_a_wrong_key(console_server):
    assert console_server.get("/console/api/whoami").json() == {
        "tenant": "ops", "role": "admin", "admin": True, "open": False, "audit": True}
    assert console_server.get("/console/api/whoami", key=USER).json()["admin"] is False
    wrong = console_server.get("/console/api/whoami", key="nope")
    assert wrong.status_code == 401 and "matches no tenant" in wrong.json()["error"]["message"]
    assert console_server.get("/console/api/whoami", key=None).status_code == 401


def _frames(console_server, count: int):
    with httpx.stream("GET", console_server.url + "/console/api/overview", timeout=60,
                      headers={"Authorization": f"Bearer {ADMIN}"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        seen = 0
        for line in stream.iter_lines():
            if line.startswith("data: "):
                seen += 1
                yield json.loads(line[6:])
                if seen == count:
                    return


def test_the_overview_stream_shows_requests_just_served(console_server):
    next(_frames(console_server, 1))  # the window's first snapshot, before the traffic
    for text in ("Hello", "Name a colour", "Count to three"):
        assert console_server.chat(text, max_tokens=6).status_code == 200
    frame = next(_frames(console_server, 1))
    (row,) = [r for r in frame["classes"] if r["slo_class"] == "medium"]
    assert row["model"] == "smollm2" and row["num_requests"] >= 3 and row["tokens_per_s"] > 0
    assert 0 < row["ttft_p50_s"] <= row["ttft_p95_s"] and row["tpot_p50_s"] > 0
    assert 0 <= row["slo_attainment"] <= 1
    (version,) = frame["versions"]
    assert version["model"] == "smollm2" and 0 <= version["kv_cache_usage"] <= 1
    assert frame["current"] == {"smollm2": "1"}


def test_the_overview_is_for_admins(console_server):
    answer = console_server.get("/console/api/overview", key=USER)
    assert answer.status_code == 403 and "admin" in answer.json()["error"]["message"]


def test_a_429_shows_in_the_overview_and_on_the_tenants_page(console_server):
    statuses = [console_server.chat("Hi", key=LIMITED, max_tokens=1).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert next(_frames(console_server, 1))["refused"]["http"].get("rate_limit_exceeded", 0) >= 1
    rows = {row["name"]: row for row in console_server.get("/console/api/tenants").json()}
    assert set(rows) == {"ops", "acme", "small", "narrow"}
    assert rows["small"]["refused"] == 1 and rows["small"]["requests_last_minute"] == 2
    assert rows["small"]["requests_per_minute"] == 2 and rows["acme"]["tokens_last_minute"] > 0
    assert rows["ops"]["key_prefixes"] == [hash_key(ADMIN)[:12]]


def test_a_grpc_refusal_shows_in_the_overview_apart_from_http(console_server):
    next(_frames(console_server, 1))  # the window's snapshot before the refusal
    request = pb.InferRequest(prompt="Hi", sampling=pb.SamplingParams(max_tokens=1))
    metadata = (("authorization", f"Bearer {NARROW}"),)
    with grpc.insecure_channel(console_server.grpc_address) as channel:
        stub = pb_grpc.InferenceServiceStub(channel)
        assert stub.Infer(request, metadata=metadata).usage.completion_tokens == 1  # the minute's one request
        with pytest.raises(grpc.RpcError) as refused:
            stub.Infer(request, metadata=metadata)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert next(_frames(console_server, 1))["refused"]["grpc"] == {"rate_limit_exceeded": 1}
    assert console_server.server.metric("mcp_requests_refused_total", transport="grpc") == 1
    rows = {row["name"]: row for row in console_server.get("/console/api/tenants").json()}
    assert rows["narrow"]["refused"] == 1 and rows["narrow"]["requests_last_minute"] == 1


def test_a_versions_memory_is_its_workers_resident_memory(console_server):
    (view,) = [v for v in console_server.get("/console/api/models").json() if v["version"] == "1"]
    assert view["memory_measure"] == "worker_rss" and view["file_bytes"] == console_server.model_file.stat().st_size
    status = Path(f"/proc/{console_server.server.worker_pid('smollm2:1')}/status").read_text()
    rss = int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]) * 1024
    assert abs(view["memory_bytes"] - rss) <= 0.1 * rss  # what the kernel says of the worker, read twice
    # the worker holds its weights, KV cache, interpreter and torch: more than the file, more than its weights
    assert view["memory_bytes"] > view["file_bytes"] and view["memory_bytes"] > view["weight_bytes"] > 0


def test_in_process_a_versions_memory_is_its_weights_as_its_worker_counts_them(console_server):
    from mcp.config.runtime import config_from_dict
    from mcp.runtime.session import Session
    from mcp.serving.console.views import memory_of

    (in_worker,) = [v for v in console_server.get("/console/api/models").json() if v["version"] == "1"]
    with Session(config_from_dict({"runtime": {"device": "cpu"}, "serving": {"isolation": "none"}})) as session:
        model = session.load_model(str(console_server.model_file))
        assert memory_of(model) == (in_worker["weight_bytes"], "weights", in_worker["weight_bytes"])


def test_a_tenant_key_sees_its_own_tenant_only(console_server):
    assert console_server.chat("Hi", key=USER, max_tokens=1).status_code == 200
    rows = console_server.get("/console/api/tenants", key=USER).json()
    assert [row["name"] for row in rows] == ["acme"]
    for path in ("/console/api/models", "/console/api/compliance/gaps"):
        assert console_server.get(path, key=USER).status_code == 403
    assert console_server.post("/console/api/audit/verify", key=USER).status_code == 403
    records = console_server.get("/console/api/audit", key=USER).json()["data"]
    assert records and {r["tenant"] for r in records} == {"acme"}
    other = console_server.get("/console/api/audit", key=USER, params={"tenant": "small"})
    assert other.status_code == 400 and "its own records only" in other.json()["error"]["message"]


def test_audit_search_filters_and_refuses_bad_input(console_server):
    assert console_server.chat("Hello there", key=USER, max_tokens=1).status_code == 200
    assert console_server.chat("Hello there", key=LIMITED, max_tokens=1).status_code in (200, 429)
    everyone = console_server.get("/console/api/audit", params={"limit": 500}).json()["data"]
    assert {"acme", "small"} <= {r["tenant"] for r in everyone}
    assert [r["seq"] for r in everyone] == sorted((r["seq"] for r in everyone), reverse=True)
    small = console_server.get("/console/api/audit", params={"tenant": "small", "model": "smollm2"}).json()["data"]
    assert small and all(r["tenant"] == "small" and r["model"] == "smollm2" for r in small)
    allowed = console_server.get("/console/api/audit", params={"decision": "allow", "limit": 2}).json()["data"]
    assert len(allowed) == 2 and all(any(d["action"] == "allow" for d in r["decisions"]) for r in allowed)
    for params, text in (({"decision": "maybe"}, "is not a policy action"), ({"limit": 0}, "out of range"),
                         ({"since": 20, "until": 10}, "since is after until"), ({"limit": "x"}, "field query.limit")):
        bad = console_server.get("/console/api/audit", params=params)
        assert bad.status_code == 400 and text in bad.json()["error"]["message"], bad.text


def test_chain_check_and_an_erasure_that_keeps_the_chain_whole(console_server):
    assert console_server.chat("Remember me", user="bob").status_code == 200
    checked = console_server.post("/console/api/audit/verify").json()
    assert checked["ok"] is True and checked["problems"] == [] and checked["num_records"] >= 5
    erased = console_server.post("/console/api/audit/erase", json={"tenant": "acme", "user": "bob"}).json()
    assert erased["key_destroyed"] is True and erased["num_captures"] >= 1 and erased["num_records"] >= 1
    assert console_server.post("/console/api/audit/verify").json()["ok"] is True
    bad = console_server.post("/console/api/audit/erase", json={"tenant": "acme"})
    assert bad.status_code == 400 and "user" in bad.json()["error"]["message"]


def test_compliance_report_in_place_gaps_and_a_signed_bundle(console_server):
    link = console_server.post("/console/api/compliance/report-link", params={"framework": "gdpr"}).json()
    report = console_server.get(link["url"], key=None)
    assert report.status_code == 200 and report.headers["x-frame-options"] == "SAMEORIGIN"
    assert "General Data Protection Regulation" in report.text and "CCPA" not in report.text
    again = console_server.get(link["url"], key=None)
    assert again.status_code == 401 and "unknown, used or expired" in again.json()["error"]["message"]
    unknown = console_server.post("/console/api/compliance/report-link", params={"framework": "hipaa"})
    assert unknown.status_code == 400 and "framework 'hipaa' is unknown" in unknown.json()["error"]["message"]
    gaps = console_server.get("/console/api/compliance/gaps").json()["data"]
    assert gaps and all(g["concepts"] for g in gaps)
    bundle = console_server.post("/console/api/compliance/bundle", json={"model": "smollm2"})
    assert bundle.status_code == 200, bundle.text
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("manifest.json"))
    assert {"manifest.json", "manifest.json.p7s", "compliance-report.json"} <= set(names)
    assert manifest["model"]["sha256"]
    missing = console_server.post("/console/api/compliance/bundle", json={"model": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]


def test_models_view_shows_file_precision_and_plan(console_server):
    (version,) = [v for v in console_server.get("/console/api/models").json() if v["current"]]
    assert version["name"] == "smollm2" and version["file"] == str(console_server.model_file)
    assert version["file_bytes"] == console_server.model_file.stat().st_size
    assert version["plan"] and sum(version["plan"].values()) > 100


def test_serving_console_false_turns_the_console_off(start_server, tiny_mcp):
    server = start_server({"serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "console": False}})
    for path in ("/console", "/console/assets/console.js", "/console/api/whoami"):
        assert httpx.get(server.url + path).status_code == 404
    assert httpx.get(server.url + "/ready").status_code == 200
    server.stop()
