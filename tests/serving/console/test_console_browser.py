"""The console in a real browser: Playwright drives Debian's Chromium (.ci/browser installs it)
against a real ``mcp2026 serve`` with the default model on loopback.

Set ``MCP_CONSOLE_SCREENSHOTS=docs/images`` to write each page's screenshot there (docs/console.md
shows them); without it they go to the test's temporary folder.
"""

from __future__ import annotations

import re
import sqlite3
import threading

import httpx
import pytest
from console_browser import ACCESSIBILITY_CHECK, Watched, launched_chromium, screenshot, wait_until

pytestmark = pytest.mark.slow
ADMIN, USER = "console-admin-key", "console-acme-key"  # conftest.py's tenants ops (admin) and acme
PAGES = ("overview", "playground", "models", "tenants", "audit", "compliance")


@pytest.fixture(scope="module")
def browser():
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def admin(browser, console_server):
    watched = Watched(browser, console_server.url)
    watched.sign_in(ADMIN)
    yield watched
    watched.page.close()


def test_sign_in_with_a_strict_csp_and_no_request_leaves_the_server(browser, console_server, tmp_path):
    watched = Watched(browser, console_server.url)
    response = watched.sign_in(ADMIN)
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert watched.page.inner_text("#who") == "Signed in as tenant ops (admin)"
    wait_until(watched.page, "Number(document.getElementById('chart-tokens').dataset.frames) >= 2")
    for name in PAGES:
        watched.open(name)
    assert watched.external() == []
    assert not [m for m in watched.messages if "Content Security Policy" in m or m.startswith("error")]
    watched.page.close()


def test_a_wrong_key_is_refused_on_the_page(browser, console_server):
    watched = Watched(browser, console_server.url)
    watched.page.goto(console_server.url + "/console")
    watched.page.get_by_label("API key").fill("not-a-key")
    watched.page.get_by_role("button", name="Sign in").click()
    watched.page.wait_for_selector("#sign-in-error:has-text('401')")
    assert "matches no tenant" in watched.page.inner_text("#sign-in-error")
    assert watched.page.is_hidden("#nav")
    watched.page.close()


def test_a_chat_streams_into_the_page(admin, console_server, tmp_path):
    page = admin.page
    admin.open("playground")
    page.get_by_label("Message").fill("Name three colours.")
    page.get_by_label("Max tokens").fill("24")
    page.evaluate("""() => { window.updates = 0; new MutationObserver(() => window.updates++)
        .observe(document.getElementById('pg-output'), {childList: true, characterData: true, subtree: true}); }""")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector("#pg-timings dt:has-text('Tokens')")
    streamed = page.inner_text("#pg-output")
    whole = console_server.post("/v1/chat/completions", json={
        "model": "smollm2", "max_tokens": 24, "temperature": 0.0, "top_p": 1.0,
        "messages": [{"role": "user", "content": "Name three colours."}]}).json()
    assert streamed.strip() == whole["choices"][0]["message"]["content"].strip()
    assert page.evaluate("window.updates") > 3  # token by token, not one block at the end
    timings = page.inner_text("#pg-timings")
    assert "Served by\nsmollm2:" in timings and "completion" in timings and "First token" in timings
    assert "Precision plan\n" in timings and "mcp-q4_1" in timings
    assert "Redacted" not in timings  # nothing was


def test_the_playground_shows_what_a_policy_redacted(admin, tmp_path):
    """conftest.py's policy redacts e-mail addresses from prompts: the page says how many, and of what."""
    page = admin.page
    admin.open("playground")
    page.get_by_label("Message").fill("Write to jane.doe@example.com or to john@example.org, please. Say hello.")
    page.get_by_label("Max tokens").fill("16")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector("#pg-timings dt:has-text('Tokens')")
    assert page.inner_text("#pg-output") and page.inner_text("#pg-error") == ""
    timings = page.inner_text("#pg-timings")
    found = re.search(r"Redacted\n(\d+) \(prompt: 2 email", timings)
    assert found and int(found[1]) >= 2, timings  # the answer's own redactions, if any, follow "; answer:"
    screenshot(page, "playground", tmp_path)


def _burst(url: str, num_requests: int) -> list[int]:
    statuses: list[int] = []

    def one(i: int) -> None:
        answer = httpx.post(url + "/v1/chat/completions", timeout=120, headers={"Authorization": f"Bearer {USER}"},
                            json={"model": "smollm2", "max_tokens": 16,
                                  "messages": [{"role": "user", "content": f"Say {i}"}]})
        statuses.append(answer.status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(num_requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def test_the_charts_move_after_a_burst(admin, console_server, tmp_path):
    page = admin.page
    wait_until(page, "Number(document.getElementById('chart-tokens').dataset.frames) >= 2")
    assert _burst(console_server.url, 6) == [200] * 6
    wait_until(page, "Number(document.getElementById('chart-tokens').dataset.max) > 0", timeout=15_000)
    wait_until(page, "document.getElementById('ov-ttft-p95').textContent !== '–'", timeout=15_000)
    rows = page.inner_text("#ov-classes tbody")
    assert "smollm2:1" in rows and "medium" in rows
    assert float(page.inner_text("#ov-ttft-p95")) > 0
    screenshot(page, "overview", tmp_path)


def test_a_swap_under_traffic_drops_nothing_and_shows_the_new_version(admin, console_server, tmp_path):
    page = admin.page
    admin.open("models")
    page.get_by_label("Name", exact=True).fill("smollm2")
    page.get_by_label("Version", exact=True).fill("2")
    page.get_by_label("Source (.mcp path or catalog name)").fill(str(console_server.model_file))
    page.get_by_label("Standby (load, do not make current)").check()
    page.get_by_role("button", name="Load", exact=True).click()
    page.wait_for_selector("#models-result:has-text('done')", timeout=120_000)
    assert "smollm2:2" in page.inner_text("#models-result") and "current" not in page.inner_text("#models-result")
    statuses: list[int] = []
    stop = threading.Event()

    def keep_sending() -> None:
        while not stop.is_set():
            statuses.extend(_burst(console_server.url, 2))

    traffic = threading.Thread(target=keep_sending)
    traffic.start()
    try:
        page.get_by_role("button", name="Make smollm2:2 current").click()
        page.wait_for_selector("#models-result:has-text('smollm2:2 current')", timeout=60_000)
    finally:
        stop.set()
        traffic.join()
    assert statuses and set(statuses) == {200}
    table = page.inner_text("#models-table tbody").replace("\t", "\n")
    assert "smollm2:2\nyes" in table and "(worker process RSS, weights " in table
    screenshot(page, "models", tmp_path)
    admin.open("overview")
    wait_until(page, "[...document.querySelectorAll('#ov-versions tbody tr')]"
                           ".some(r => r.textContent.startsWith('smollm2:2') && r.cells[1].textContent === 'yes')")


def test_a_tenant_key_sees_its_own_tenant_only(browser, console_server, tmp_path):
    assert console_server.chat("Hi", key=USER, max_tokens=2).status_code == 200
    watched = Watched(browser, console_server.url)
    watched.sign_in(USER)
    page = watched.page
    assert page.inner_text("#who") == "Signed in as tenant acme (user)"
    visible = [b.inner_text() for b in page.query_selector_all("nav button") if b.is_visible()]
    assert visible == ["Playground", "Tenants", "Audit"]
    watched.open("tenants")
    page.wait_for_selector("#tenants-table tbody tr")
    assert [r.inner_text().split("\t")[0] for r in page.query_selector_all("#tenants-table tbody tr")] == ["acme"]
    watched.open("audit")
    page.wait_for_selector("#audit-table tbody tr")
    tenants = {r.query_selector_all("td")[2].inner_text() for r in page.query_selector_all("#audit-table tbody tr")}
    assert tenants == {"acme"} and page.is_hidden("#audit-verify")
    page.fill("#au-tenant", "ops")
    page.get_by_role("button", name="Search").click()
    page.wait_for_selector("#audit-error:has-text('its own records only')")
    answer = httpx.get(console_server.url + "/console/api/overview", headers={"Authorization": f"Bearer {USER}"})
    assert answer.status_code == 403
    page.close()


def test_every_page_has_labels_contrast_and_keyboard_use(admin, tmp_path):
    page = admin.page
    for name in PAGES:
        admin.open(name)
        problems = page.evaluate(ACCESSIBILITY_CHECK, f"#page-{name}")
        assert problems == [], f"{name}: {problems}"
        if name in ("tenants", "audit"):
            screenshot(page, name, tmp_path)
    page.focus("nav button[data-page='overview']")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the second nav button: Playground
    page.wait_for_selector("#page-playground:not([hidden])")
    assert page.evaluate("document.activeElement.id") == "main"


def test_compliance_shows_the_report_in_place_and_downloads_a_bundle(admin, tmp_path):
    page = admin.page
    admin.open("compliance")
    page.wait_for_selector("#gaps-list li")
    page.select_option("#co-framework", "gdpr")
    page.get_by_role("button", name="Show the live report").click()
    report = page.frame_locator("#report-frame")
    report.locator("text=General Data Protection Regulation").first.wait_for()
    with page.expect_download() as caught:
        page.get_by_role("button", name="Download the signed bundle").click()
    download = caught.value
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    assert download.suggested_filename.startswith("smollm2-") and saved.read_bytes()[:2] == b"PK"
    assert "Signed bundle ready" in page.inner_text("#bundle-result")
    assert admin.external() == []
    screenshot(page, "compliance", tmp_path)


def test_the_chain_check_passes_then_fails_after_a_record_is_edited(admin, console_server, tmp_path):
    page = admin.page
    admin.open("audit")
    page.get_by_role("button", name="Check the chain").click()
    page.wait_for_selector("#audit-verify-result:has-text('Chain ok')")
    connection = sqlite3.connect(console_server.audit_db)
    try:  # what someone with the database file could do: drop the guard, rewrite a record
        connection.execute("DROP TRIGGER audit_records_no_update")
        connection.execute("UPDATE audit_records SET tenant = 'someone-else' WHERE seq = 2")
        connection.commit()
    finally:
        connection.close()
    page.get_by_role("button", name="Check the chain").click()
    page.wait_for_selector("#audit-verify-result:has-text('Chain FAILED')")
    verdict = page.inner_text("#audit-verify-result")
    assert "record 2" in verdict and "was edited" in verdict
