"""``/console`` on a real ``mcp2026 gateway`` (registry on SQLite, real upstreams), in Debian's
Chromium: the registry with stages and signature status, where a request would route, the pools'
members and breakers, and a canary rollout with its gates, aborted from the page."""

from __future__ import annotations

import httpx
import pytest
from console_browser import ACCESSIBILITY_CHECK, Watched, launched_chromium, screenshot

from gateway_process import ACME_KEY, ADMIN_KEY
from mcp.gateway.registry.artifacts import read_artifact
from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage
from mcp.serving.console.routes import CSP

pytestmark = pytest.mark.slow
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
RULES = {"version": 1, "routes": [
    {"name": "good-rollout", "conditions": {"model": "bot-good"}, "split": {"arms": [
        {"name": "stable", "weight": 100, "backend": {"model_id": "tiny:1", "instance_pool": "a"}},
        {"name": "canary", "weight": 0, "backend": {"model_id": "tiny:2", "instance_pool": "b"}}]}},
], "default": {"backend": {"model_id": "tiny:1", "instance_pool": "a"}}}


@pytest.fixture(scope="module")
def gateway(start_gateway, pools, tiny_mcp, tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('console-registry') / 'registry.db'}"
    artifact = read_artifact(tiny_mcp)
    with Registry.open(url, actor="tester") as registry:
        registry.register(artifact, "tiny", "1", Stage.PRODUCTION)
        registry.register(artifact, "tiny", "2")
    return start_gateway({"gateway": {"registry": url}, "canary": {"interval_s": 0.3},
                          "pools": {"a": pools["a"], "b": pools["b"]}}, RULES)


@pytest.fixture(scope="module")
def browser():
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def admin(browser, gateway):
    watched = Watched(browser, gateway.url)
    response = watched.sign_in(ADMIN_KEY)
    assert response.headers["content-security-policy"] == CSP
    yield watched
    watched.page.close()


def test_registry_routes_and_pools_from_the_live_gateway(admin, tmp_path):
    page = admin.page
    page.wait_for_selector("#registry-table tbody tr")
    screenshot(page, "gateway-registry", tmp_path)
    rows = [r.inner_text().split("\t") for r in page.query_selector_all("#registry-table tbody tr")]
    assert {(r[0], r[1]) for r in rows} == {("tiny:1", "production"), ("tiny:2", "staging")}
    assert all(r[6] for r in rows)  # the signature status, whatever it is, is shown
    admin.open("routes")
    page.fill("#rt-body", '{"model": "bot-good", "messages": [{"role": "user", "content": "Hi"}]}')
    page.get_by_role("button", name="Explain").click()
    page.wait_for_selector("#route-result dd")
    explained = page.inner_text("#route-result")
    screenshot(page, "gateway-routes", tmp_path)
    assert "Route\ngood-rollout" in explained and "Pool\na" in explained and "Member now\nstable" in explained
    page.fill("#rt-body", "{not json")
    page.get_by_role("button", name="Explain").click()
    page.wait_for_selector("#routes-error:has-text('not valid JSON')")
    admin.open("pools")
    page.wait_for_selector("#pools-table tbody tr")
    members = {r.inner_text().split("\t")[1]: r.inner_text() for r in page.query_selector_all("#pools-table tbody tr")}
    screenshot(page, "gateway-pools", tmp_path)
    assert set(members) == {"stable", "canary"} and all("closed" in text for text in members.values())
    for name in ("registry", "routes", "pools", "rollouts"):
        admin.open(name)
        assert page.evaluate(ACCESSIBILITY_CHECK, f"#page-{name}") == []
    assert admin.external() == []


def test_a_canary_shows_its_gates_and_is_aborted_from_the_page(admin, gateway, tmp_path):
    started = httpx.post(gateway.url + "/admin/rollouts", headers=ADMIN, timeout=30, json={
        "route": "good-rollout", "steps": [20, 50, 100], "hold_s": 600, "min_requests": 1000,
        "max_p95_ms": 750}).json()
    assert started["status"] == "running"
    page = admin.page
    admin.open("rollouts")
    page.wait_for_selector("#rollouts-table tbody tr:has-text('running')")
    page.wait_for_selector("#rollout-title:has-text('p95 ≤ 750 ms')")
    assert "start" in page.inner_text("#rollout-events tbody")
    page.get_by_role("button", name=f"Abort rollout {started['id']} (good-rollout)").click()
    page.wait_for_selector(f"#rollouts-result:has-text('Abort rollout {started['id']}: now')")
    after = httpx.get(gateway.url + f"/admin/rollouts/{started['id']}", headers=ADMIN, timeout=30).json()
    assert after["status"] != "running" and after["weight"] == 0
    assert after["status"] in page.inner_text("#rollouts-result")
    page.wait_for_selector("#rollout-events tbody tr:has-text('abort')")
    screenshot(page, "gateway-rollouts", tmp_path)


def test_a_key_without_the_admin_role_sees_no_gateway_data(browser, gateway):
    watched = Watched(browser, gateway.url)
    watched.sign_in(ACME_KEY)
    visible = [b.inner_text() for b in watched.page.query_selector_all("nav button") if b.is_visible()]
    assert visible == ["Access"]
    answer = httpx.get(gateway.url + "/console/api/registry", headers={"authorization": f"Bearer {ACME_KEY}"})
    assert answer.status_code == 403
    watched.page.close()
