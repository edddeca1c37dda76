"""A real browser opens the report from disk with the network blocked.

Headless Chromium from Debian's ``chromium`` package (``/usr/bin/chromium``; ``.ci/run``
installs it), driven by Playwright. Every non-``file:`` request is aborted and recorded.
The report is rendered from the HAND-MADE contract documents (tests/fixtures/report/) plus a
SYNTHETIC per-minute series (seeded Poisson counts) so that every chart kind is drawn.
When ``CI`` is set and Chromium or Playwright is missing, the test fails instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bearing_lib.report.model import build_report
from bearing_lib.report.render import write_report
from tests.report.conftest import hand_made, provenance

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAYLOAD = "</script><img src=x onerror=alert(1)>"

pytestmark = pytest.mark.browser


def _need(ok: bool, what: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {what} is missing: the browser test must run in CI")
    pytest.skip(f"{what} is missing (install Debian's chromium package)")


@pytest.fixture(scope="module")
def browser():
    _need(CHROMIUM.exists() or shutil.which("chromium") is not None, "Chromium (/usr/bin/chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover
        _need(False, "the playwright Python package")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    limits = hand_made("limits")
    limits["conditions"]["model"] = PAYLOAD  # hostile text must stay text in a real browser too
    counts = np.random.default_rng(11).poisson(120, size=7 * 1440)
    series = [{"minute_start_s": 1_763_942_400 + 60 * i, "requests": int(c)} for i, c in enumerate(counts)]
    m = build_report(limits=limits, profile=hand_made("profile"), plan=hand_made("plan"),
                     previous=hand_made("previous_summary"), provenance=provenance(), name="browser",
                     per_minute_series=series)
    return write_report(m, tmp_path_factory.mktemp("browser"))["html"]


def open_offline(browser, path: Path):
    """A page on ``path`` that refuses every non-file request (recorded) and records console errors and
    warnings, page errors and dialogs: ``(page, problems, requests)``. Shared by the browser tests."""
    page = browser.new_page()
    problems: list[str] = []
    requests: list[str] = []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(path.as_uri())
    return page, problems, requests


def test_report_draws_offline_without_errors_or_requests(browser, report_file):
    page, problems, requests = open_offline(browser, report_file)
    page.wait_for_function("document.querySelectorAll('.chart svg').length >= 6", timeout=20_000)

    # every chart div holds a vega-embed SVG with marks
    charts = page.locator("div.chart")
    assert charts.count() == 6
    for i in range(charts.count()):
        assert charts.nth(i).locator("svg").count() >= 1
    assert page.locator("#chart-peak svg .mark-line path").count() >= 1
    assert page.locator("#chart-curve-0 svg .mark-line path").count() >= 1
    assert page.locator("#chart-curve-0 svg .mark-rect path").count() >= 1  # phase bands
    assert page.locator("#chart-fos svg .mark-rect path").count() >= 1  # FOS bars

    # the verdict is the first thing on the page, and hostile text stayed text
    assert page.locator("header .badge.big").inner_text().strip().lower() == "yellow"
    assert page.locator("img").count() == 0
    assert PAYLOAD in page.locator("#mixes").inner_text()

    assert requests == [], f"network requests attempted: {requests}"
    assert problems == [], problems
    page.close()


def test_missing_chromium_fails_under_ci_and_skips_otherwise(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set but Chromium"):
        _need(False, "Chromium (/usr/bin/chromium)")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        _need(False, "Chromium (/usr/bin/chromium)")
    _need(True, "anything")  # present: no effect


@pytest.fixture(scope="module")
def relative_reports(tmp_path_factory) -> dict[str, Path]:
    """Reports of the two real relative-clock traces (Mooncake requests, ServeGen rate windows)."""
    from tests.report.relative_clock_build import MOONCAKE, SERVEGEN, build

    return {key: build(path, tmp_path_factory.mktemp(key), span=span)[1]["html"]
            for key, path, span in (("mooncake", MOONCAKE, "10m..40m"), ("servegen", SERVEGEN, ""))}


@pytest.mark.parametrize("key", ["mooncake", "servegen"])
def test_relative_clock_report_draws_every_chart(browser, relative_reports, key):
    """The peak and CBU charts of a relative-clock trace draw (a line with a path, numeric elapsed ticks)
    with no console warning: no "Infinite extent" from strings on a time axis, no dead peak link."""
    page, problems, _requests = open_offline(browser, relative_reports[key])
    charts = page.locator("div.chart")
    n = charts.count()
    assert n >= 5  # peak, FOS, two load curves, CBU
    page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {n}", timeout=20_000)
    for i in range(n):
        assert charts.nth(i).locator("svg").count() >= 1
    for cid in ("chart-peak", "chart-cbu"):
        assert page.locator(f"#{cid} svg .mark-line path").count() >= 1, cid
        ticks = page.eval_on_selector_all(f"#{cid} svg .role-axis-label text", "els => els.map(e => e.textContent)")
        assert ticks and not any("01-01" in t or "1970" in t for t in ticks), (cid, ticks)
    assert page.locator("a[href='#peak']").count() == 1 and page.locator("#peak").count() == 1
    assert "on the trace's relative clock" in page.locator("#window-line").inner_text()
    assert problems == [], problems
    page.close()
