"""The reports in a real browser: Debian's headless Chromium driven by selenium through
/usr/bin/chromedriver (given explicitly, so selenium never looks for a driver to download).

Each page must load without a console message of level SEVERE (errors, CSP refusals), fetch
nothing, draw every chart with a non-zero size, and leave a full-page screenshot under the
test's tmp dir. A 5,000-move plan's page must stay under a few MB and load and scroll quickly;
its size and times are written to metrics.json beside the screenshot.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS
from executor.records import Record
from kafka_rebalance.report.files import write_report
from kafka_rebalance.report.page import render_report
from kafka_rebalance.report.plan_view import plan_view
from kafka_rebalance.report.run_view import run_view
from planner.planfile import PlanFile

pytestmark = pytest.mark.browser

RATE = 50e6
PLAN_CHARTS = ("chart-util-disk", "chart-util-net_in", "chart-util-net_out", "chart-flows",
               "chart-timeline")
RUN_CHARTS = ("chart-run", "chart-rates")
WIDTH = 1280
MAX_PAGE_BYTES = 3_000_000  # "a few MB"
MAX_LOAD_SECONDS = 15.0  # a 2-core machine busy with CI: generous, still catches a hang


@pytest.fixture(scope="module")
def browser(browser_paths: tuple[str, str]) -> Iterator[webdriver.Chrome]:
    chromium, chromedriver = browser_paths
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium manager: never go online
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", f"--window-size={WIDTH},1000",
                     "--hide-scrollbars", "--disable-extensions", "--no-first-run"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: webdriver.Chrome, page: Path) -> float:
    """Load `page`; the seconds from navigation start to the end of the load event."""
    driver.get_log("browser")  # type: ignore[no-untyped-call]  # drop earlier pages' messages
    driver.get(page.resolve().as_uri())
    timing: Any = driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "return n ? n.loadEventEnd - n.startTime : null;")
    assert timing is not None and timing > 0
    return float(timing) / 1000


def console_problems(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [entry for entry in entries if entry.get("level") == "SEVERE"]


def fetched(driver: webdriver.Chrome) -> list[str]:
    names: Any = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name);")
    return list(names)


def chart(driver: webdriver.Chrome, chart_id: str) -> WebElement:
    element = driver.find_element(By.ID, chart_id)
    size = element.size
    assert element.tag_name == "svg" and size["width"] > 100 and size["height"] > 50, \
        (chart_id, size)
    drawn = element.find_elements(By.CSS_SELECTOR, "path, rect, image, use")
    assert len(drawn) > 10, (chart_id, len(drawn))
    return element


def screenshot(driver: webdriver.Chrome, path: Path) -> Path:
    """The whole page, not only the window: the window is made as tall as the page."""
    height: Any = driver.execute_script("return document.documentElement.scrollHeight;")
    driver.set_window_size(WIDTH, min(int(height) + 100, 16000))
    assert driver.save_screenshot(str(path))
    driver.set_window_size(WIDTH, 1000)
    assert path.stat().st_size > 10_000
    return path


def test_plan_report_in_chromium(browser: webdriver.Chrome, tmp_path: Path,
                                 small_plan: PlanFile) -> None:
    page = tmp_path / "plan-report.html"
    view = plan_view(small_plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
    write_report(page, render_report(title="plan review", plan=view))
    open_page(browser, page)
    for chart_id in (*PLAN_CHARTS, "chart-timeline-auto"):
        chart(browser, chart_id)
    assert console_problems(browser) == []
    assert fetched(browser) == []
    # hostile rack and warning strings are text: no element was made of them
    assert browser.find_elements(By.TAG_NAME, "script") == []
    assert browser.find_elements(By.TAG_NAME, "img") == []
    rack = small_plan.before.brokers[0].rack
    cells = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "table.review td")]
    assert rack in cells
    assert any(small_plan.warnings[0] in li.text
               for li in browser.find_elements(By.CSS_SELECTOR, "#review-lines li"))
    # the answer first: the headline sits above every chart, within the first screen
    headline = browser.find_element(By.ID, "plan-headline")
    assert "one at a time" in headline.text and "with --concurrency auto" in headline.text
    charts_top = min(chart(browser, c).location["y"] for c in PLAN_CHARTS)
    assert headline.location["y"] < min(charts_top, 1000), (headline.location, charts_top)
    screenshot(browser, tmp_path / "plan-report.png")


def test_status_report_in_chromium(browser: webdriver.Chrome, tmp_path: Path,
                                   small_plan: PlanFile, finished_run: list[Record]) -> None:
    page = tmp_path / "status-report.html"
    view = plan_view(small_plan, 1e6, quota_window_seconds=11.0)
    measured = {3: [(float(t), 0.9e6) for t in range(2, 42)]}
    write_report(page, render_report(title="run", plan=view, run=run_view(finished_run),
                                     measured=measured))
    open_page(browser, page)
    for chart_id in (*RUN_CHARTS, *PLAN_CHARTS):
        chart(browser, chart_id)
    assert console_problems(browser) == []
    assert fetched(browser) == []
    holds = browser.find_element(By.ID, "gate-holds").text
    assert "orders-0" in holds and "27s" in holds
    screenshot(browser, tmp_path / "status-report.png")


def test_a_5000_move_plan_stays_small_and_quick(browser: webdriver.Chrome, tmp_path: Path,
                                                big_plan: PlanFile) -> None:
    began = time.perf_counter()
    view = plan_view(big_plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
    html = render_report(title="5,000 moves", plan=view)
    render_seconds = time.perf_counter() - began
    page = tmp_path / "big-plan.html"
    write_report(page, html)
    size = page.stat().st_size
    load_seconds = open_page(browser, page)
    for chart_id in PLAN_CHARTS:
        chart(browser, chart_id)
    began = time.perf_counter()
    browser.execute_script("window.scrollTo(0, document.documentElement.scrollHeight);")
    rows: Any = browser.execute_script("return document.querySelectorAll('#moves tr').length;")
    respond_seconds = time.perf_counter() - began
    assert console_problems(browser) == []
    assert fetched(browser) == []
    metrics = {"moves": len(big_plan.moves), "bytes": size, "render_seconds": render_seconds,
               "load_seconds": load_seconds, "scroll_and_query_seconds": respond_seconds,
               "listed_rows": int(rows) - 1}
    (tmp_path / "metrics.json").write_text(json.dumps(metrics, indent=1))
    screenshot(browser, tmp_path / "big-plan.png")
    assert size < MAX_PAGE_BYTES, metrics
    assert load_seconds < MAX_LOAD_SECONDS and respond_seconds < 5.0, metrics
    assert metrics["listed_rows"] == 1000


READABLE_PX = 10.0  # the smallest chart text a reader can take in without zooming
TEXTS = """
const svg = document.getElementById(arguments[0]);
const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
return Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim()).map(t => {
  const r = t.getBoundingClientRect();
  return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale,
          box: [r.left, r.top, r.right, r.bottom]};
});
"""


def overlapping(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of chart texts whose boxes overlap by more than a pixel both ways."""
    pairs = []
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            wide = min(a["box"][2], b["box"][2]) - max(a["box"][0], b["box"][0])
            high = min(a["box"][3], b["box"][3]) - max(a["box"][1], b["box"][1])
            if wide > 1.0 and high > 1.0:
                pairs.append((a["text"], b["text"]))
    return pairs


@pytest.mark.parametrize("width", [900, 1400])
def test_chart_labels_are_readable_and_apart_at_900_and_1400_px(
        browser: webdriver.Chrome, tmp_path: Path, small_plan: PlanFile, zoned_plan: PlanFile,
        wide_plan: PlanFile, strip_plan: PlanFile, finished_run: list[Record],
        width: int) -> None:
    """Every text of every chart is at least READABLE_PX high as the page shows it, and no
    two texts of a chart overlap: for a few brokers, racks forcing targets, 40 brokers in
    rows (a removed broker's longer label included), 200 on a strip with the notable ones
    named, and a run's report."""
    browser.set_window_size(width, 1000)
    try:
        for name, plan in (("small", small_plan), ("zoned", zoned_plan), ("wide", wide_plan),
                           ("strip", strip_plan), ("run", small_plan)):
            page = tmp_path / f"{name}-{width}.html"
            view = plan_view(plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
            run = run_view(finished_run) if name == "run" else None
            write_report(page, render_report(title=name, plan=view, run=run))
            open_page(browser, page)
            drawn = [e.get_attribute("id") for e in
                     browser.find_elements(By.CSS_SELECTOR, "svg[id^='chart-']")]
            assert set(PLAN_CHARTS) <= set(drawn), (name, drawn)
            for chart_id in drawn:
                texts: list[dict[str, Any]] = browser.execute_script(TEXTS, chart_id)
                assert texts, (name, chart_id)
                small = [(t["text"], round(t["px"], 1)) for t in texts
                         if t["px"] < READABLE_PX]
                assert small == [], (name, chart_id, width)
                assert overlapping(texts) == [], (name, chart_id, width)
    finally:
        browser.set_window_size(WIDTH, 1000)
