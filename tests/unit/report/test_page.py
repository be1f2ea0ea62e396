"""The HTML page without a browser: escaping, self-containment, stable and unique ids."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS
from executor.records import Record
from kafka_rebalance.report import charts
from kafka_rebalance.report.files import is_report_file, write_report
from kafka_rebalance.report.page import render_report
from kafka_rebalance.report.plan_view import plan_view, resource_view
from kafka_rebalance.report.run_view import run_view
from planner.planfile import PlanFile
from topology.model import Resource
from topology.units import duration_text

RATE = 50e6
CHART_IDS = ("chart-util-disk", "chart-util-net_in", "chart-util-net_out", "chart-flows",
             "chart-timeline")


def plan_page(plan: PlanFile) -> str:
    view = plan_view(plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
    return render_report(title="plan <b>&", plan=view)


def test_user_strings_are_escaped_everywhere(small_plan: PlanFile) -> None:
    html = plan_page(small_plan)
    rack = small_plan.before.brokers[0].rack or ""
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;alert(" in html  # the rack name, shown as text (page and charts)
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; a warning" in html
    assert "<title>plan &lt;b&gt;&amp;</title>" in html
    assert rack not in html


def test_a_dollar_in_a_name_is_text_not_mathtext(small_plan: PlanFile) -> None:
    assert charts.label("$x$") == r"\$x\$"
    assert charts.label("r" * 40) == "r" * 23 + "\u2026"
    view = resource_view(small_plan, Resource.DISK)
    dollars = replace(view, brokers=tuple(replace(b, rack="$x$") for b in view.brokers))
    svg = charts.utilization_chart(dollars)
    assert ">$x$<" in svg  # shown as written, not typeset as math


def test_the_page_fetches_nothing(small_plan: PlanFile, finished_run: list[Record]) -> None:
    html = render_report(title="run", plan=plan_view(small_plan, RATE,
                                                     quota_window_seconds=11.0),
                         run=run_view(finished_run))
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for attribute, value in re.findall(r'\b(src|href|xlink:href|action|data)\s*=\s*"([^"]*)"',
                                       html):
        assert value.startswith(("data:", "#")), (attribute, value)
    assert not re.search(r"url\((?!#)", html)  # CSS urls only to fragments
    assert "<script" not in html and "<link" not in html and "@import" not in html


def test_charts_are_inline_svg_with_unique_ids(small_plan: PlanFile,
                                               finished_run: list[Record]) -> None:
    html = render_report(title="run", plan=plan_view(small_plan, RATE,
                                                     quota_window_seconds=11.0),
                         run=run_view(finished_run))
    for chart in (*CHART_IDS, "chart-run", "chart-rates"):
        assert f'<svg id="{chart}"' in html, chart
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    ids = Counter(re.findall(r'\bid="([^"]+)"', html))
    assert not [i for i, n in ids.items() if n > 1], "element ids repeat across charts"


def test_the_same_plan_gives_the_same_page(small_plan: PlanFile) -> None:
    assert plan_page(small_plan) == plan_page(small_plan)


def test_status_page_shows_what_happened(small_plan: PlanFile,
                                         finished_run: list[Record]) -> None:
    html = render_report(title="run", plan=None, run=run_view(finished_run),
                         notices=["No plan <file>"])
    assert '<section id="plan">' not in html and '<section id="run">' in html
    assert "No plan &lt;file&gt;" in html
    assert re.search(r"<td>1</td><td class=\"text\">orders-0</td><td>27s</td>", html)
    assert "a &lt;note&gt; from the operator" in html
    assert "1.0MB/s</td><td>500.0kB/s" in html  # the re-derived follower rate
    assert "broker(s) [6] went offline during the move" in html
    assert "`rebalance resume` to run the 1 pending move(s)" in html


def test_a_written_report_is_recognized_and_nothing_else(tmp_path: Path,
                                                         small_plan: PlanFile) -> None:
    page = tmp_path / "report.html"
    write_report(page, plan_page(small_plan))
    assert is_report_file(page)
    other = tmp_path / "other.html"
    other.write_text("<html><body>mine</body></html>")
    assert not is_report_file(other) and not is_report_file(tmp_path / "missing.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.html", "report.html"]


def test_a_5000_move_page_stays_small(big_plan: PlanFile) -> None:
    html = plan_page(big_plan)
    assert len(html.encode()) < 3_000_000, len(html.encode())
    assert "first 1000 of 5000" in html


def test_an_empty_plan_and_a_run_not_started_still_draw(zoned_plan: PlanFile,
                                                        finished_run: list[Record]) -> None:
    assert zoned_plan.moves == ()
    view = plan_view(zoned_plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
    header_only = run_view(finished_run[:1], now=1_767_225_600.0)
    assert header_only.started_at is None and header_only.elapsed == 0
    html = render_report(title="empty", plan=view, run=header_only)
    for chart in (*CHART_IDS, "chart-run", "chart-rates"):
        assert f'<svg id="{chart}"' in html, chart
    assert "target \u00b110%" in html  # the zones force targets: they are drawn


def test_where_the_rack_rule_forces_targets_the_chart_draws_them_not_the_average_band(
        zoned_plan: PlanFile, small_plan: PlanFile) -> None:
    forced = resource_view(zoned_plan, Resource.DISK)
    assert forced.forced and all(b.target is not None for b in forced.brokers)
    svg = charts.utilization_chart(forced)
    assert "target \u00b110%" in svg and "cluster average (out of reach)" in svg
    assert "average after" not in svg
    free = charts.utilization_chart(resource_view(small_plan, Resource.DISK))
    assert "average after \u00b110%" in free and "target" not in free


def test_each_broker_is_labelled_with_its_amount_after_the_plan(small_plan: PlanFile) -> None:
    view = resource_view(small_plan, Resource.DISK)
    after = {b.id: b for b in small_plan.after.brokers}
    for broker in view.brokers:
        assert broker.amount_after == after[broker.broker_id].load.disk_bytes
    svg = charts.utilization_chart(view)
    assert "its disk after the plan in" in svg
    assert {b.role for b in view.brokers} == {"", "new"}
    assert ">new</text>" in svg  # the role on a line of its own, under the id and amount


def test_a_plan_page_times_the_moves_one_at_a_time_and_side_by_side(
        small_plan: PlanFile) -> None:
    """Both ways the run may go, each with its own chart, the same ETAs as the headline."""
    view = plan_view(small_plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
    assert view.side_by_side is not None and view.timeline.concurrency == 1
    assert view.side_by_side.concurrency == "auto"
    html = render_report(title="plan", plan=view)
    assert '<svg id="chart-timeline"' in html and '<svg id="chart-timeline-auto"' in html
    eta = dict(view.headline)["ETA"]
    assert duration_text(view.side_by_side.eta_seconds) in eta
    assert duration_text(view.timeline.eta_seconds) in eta
    # a run's page times the plan the way the run goes, only
    run_page = plan_view(small_plan, RATE, concurrency=2, quota_window_seconds=11.0)
    assert run_page.side_by_side is None
    assert "chart-timeline-auto" not in render_report(title="run", plan=run_page)


def test_rows_of_bars_up_to_three_rows_then_one_strip_naming_the_notable_brokers(
        wide_plan: PlanFile, strip_plan: PlanFile) -> None:
    rows = resource_view(wide_plan, Resource.DISK)
    assert len(rows.brokers) <= charts.UTIL_STRIP_ABOVE
    assert "under its id" in charts.utilization_chart(rows)
    strip = resource_view(strip_plan, Resource.DISK)
    assert len(strip.brokers) == 200
    svg = charts.utilization_chart(strip)
    assert "under its id" not in svg and "200 brokers, by rack" in svg
    height = float(re.search(r'<svg[^>]*height="([0-9.]+)pt"', svg).group(1))  # type: ignore[union-attr]
    assert height < 4 * 72  # one strip, not thirteen rows
    named = charts._notable(strip, charts.FIG_WIDTH * 0.9 / len(strip.brokers))
    assert 0 < len(named) <= charts.STRIP_NAMED
    assert {"new", "removed"} <= {strip.brokers[i].role for i in named}  # roles are named
    assert all(f">{charts._strip_name(strip.brokers[i])}<" in svg for i in named), named


def test_a_strip_names_the_roles_first_and_never_two_names_that_touch(
        strip_plan: PlanFile) -> None:
    view = resource_view(strip_plan, Resource.DISK)
    per_broker = charts.FIG_WIDTH * 0.9 / len(view.brokers)
    named = charts._notable(view, per_broker)
    for a, b in itertools.pairwise(named):
        half = (len(charts._strip_name(view.brokers[a]))
                + len(charts._strip_name(view.brokers[b]))) * charts.CHAR_INCHES / 2
        assert (b - a) * per_broker >= half, (a, b)
    # squeezed to a tenth of the width, fewer names fit, and a new broker keeps its name
    squeezed = charts._notable(view, per_broker / 10)
    assert len(squeezed) < len(named)
    assert any(view.brokers[i].role for i in squeezed)
