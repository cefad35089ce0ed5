"""What the console's browser tests share (the server's and the gateway's): Debian's Chromium
driven by Playwright, a page that records every request and console message, a poll that works
under the console's CSP, and an accessibility check of a page section."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")


@contextmanager
def launched_chromium() -> Iterator:
    """Headless Debian Chromium under Playwright; a skip that says what to install when either is missing."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    if CHROMIUM is None:
        pytest.skip("chromium is missing: run .ci/browser (apt-get install chromium)")
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


class Watched:
    """A page with every request it made and every console message it printed."""

    def __init__(self, browser, server_url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.requests: list[str] = []
        self.messages: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda message: self.messages.append(f"{message.type}: {message.text}"))
        self.page.on("dialog", lambda dialog: dialog.accept())
        self.url = server_url

    def sign_in(self, key: str):
        page = self.page
        response = page.goto(self.url + "/console")
        page.get_by_label("API key").fill(key)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_selector("#who:has-text('Signed in')")
        return response

    def open(self, name: str) -> None:
        self.page.get_by_role("button", name=name.capitalize(), exact=True).click()
        self.page.wait_for_selector(f"#page-{name}:not([hidden])")
        self.page.wait_for_selector(f"body[data-loaded='{name}']", state="attached")

    def external(self) -> list[str]:
        return [url for url in self.requests if not url.startswith((self.url + "/", "blob:", "data:"))]


def wait_until(page, expression: str, timeout: float = 30_000) -> None:
    """Poll ``expression`` in the page until it is true. Playwright's wait_for_function evaluates
    its predicate with eval, which the console's CSP (no 'unsafe-eval') rightly refuses."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout / 1000:.0f} s: {expression}")
        page.wait_for_timeout(200)


def screenshot(page, name: str, tmp_path: Path) -> None:
    """The page as a PNG in $MCP_CONSOLE_SCREENSHOTS (docs/images for the docs), else in ``tmp_path``."""
    folder = Path(os.environ.get("MCP_CONSOLE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"console-{name}.png"), full_page=True)


# Every form control has a label, every button a name, and visible text a contrast of at least
# 4.5:1 against the first opaque background behind it (WCAG 2 AA).
ACCESSIBILITY_CHECK = """(root) => {
  const problems = [];
  const section = document.querySelector(root);
  for (const control of section.querySelectorAll('input, select, textarea')) {
    if (control.offsetParent !== null && control.labels.length === 0) problems.push(`no label: #${control.id}`);
  }
  for (const button of section.querySelectorAll('button')) {
    if (!(button.getAttribute('aria-label') || button.textContent.trim())) problems.push('a button without a name');
  }
  const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
      .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (node) => {
    for (; node; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c.length < 4 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  for (const node of section.querySelectorAll('*')) {
    const own = [...node.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || node.offsetParent === null) continue;
    const a = lum(rgb(getComputedStyle(node).color)), b = lum(background(node));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) problems.push(`contrast ${ratio.toFixed(2)} on "${node.textContent.trim().slice(0, 30)}"`);
  }
  return problems;
}"""
