"""`--html PATH` of `plan`, `diff` and `status`: the review and the run as one HTML page.

The commands check the path before any work (`check_html`: never an input file, a directory
or a file of another kind) and write the page after their terminal output. The report modules
(jinja2, matplotlib, numpy) are imported only when a page is written, so `rebalance` starts
fast. Prometheus is optional for `status`: when it does not answer, the page says so and shows
what the journal alone tells.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_rebalance.commands.render import err_console, say
from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.outputs import InputFiles, Output, check_output, refuse_inputs
from kafka_rebalance.report.files import is_report_file

if TYPE_CHECKING:
    from executor.records import Record
    from planner.planfile import PlanFile

HtmlOption = Annotated[Path | None, typer.Option(
    "--html", metavar="PATH", help="Also write the report as one self-contained HTML page "
    "(charts inline, opens offline).")]
HtmlPrometheusOption = Annotated[str | None, typer.Option(
    "--prometheus", metavar="URL", help="With --html: draw each receiving broker's measured "
    "reassignment rate from this Prometheus (skipped, with a note on the page, when it does "
    "not answer).")]


def html_output(path: Path) -> Output:
    return Output(path, "--html", "report", is_report_file)


def check_html(path: Path | None, inputs: InputFiles, force: bool | None = None) -> None:
    """Refuse, before any work, an --html path that is an input, a directory or a device, or
    an existing file that is not a report (without --force; `force=None`: the command has
    no --force, so such a file is never replaced)."""
    if path is None:
        return
    output = html_output(path)
    if force is None and path.is_file() and not is_report_file(path):
        refuse_inputs(output, inputs)
        raise InputError(f"--html {path} exists and is not a report written by rebalance; "
                         "choose another --html path")
    check_output(output, inputs, bool(force))


def check_status_html(html: Path | None, prometheus: str | None, inputs: InputFiles) -> None:
    """`status --html PATH [--prometheus URL]`: the path checked like any output; --prometheus
    serves only the page."""
    if prometheus is not None and html is None:
        raise InputError("--prometheus applies to --html (the page's measured copy rates): "
                         "give both, or neither")
    check_html(html, inputs)


def _now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_plan_html(path: Path, plan_file: PlanFile, rate_bytes_per_sec: float,
                    title: str) -> None:
    """The plan's review as a page, moves timed like the terminal review's ETA."""
    from kafka_rebalance.report.files import write_report
    from kafka_rebalance.report.page import render_report
    from kafka_rebalance.report.plan_view import plan_view

    view = plan_view(plan_file, rate_bytes_per_sec)
    write_report(path, render_report(title=title, plan=view, generated_at=_now_text()))
    say(f"report: {path}", err_console)


def write_status_html(path: Path, journal: Path, records: Sequence[Record],
                      plan_path: Path | None, prometheus: str | None) -> None:
    """The run from its journal's records, the plan beside it (PLAN.json, or the journal's
    name less .journal) and, when Prometheus answers, each receiving broker's measured copy
    rate."""
    from kafka_rebalance.report.files import write_report
    from kafka_rebalance.report.page import render_report
    from kafka_rebalance.report.plan_view import plan_view
    from kafka_rebalance.report.run_view import run_view
    from kafka_rebalance.usecases.status import measured_copy_rates, plan_of_run

    run = run_view(records, now=time.time())
    notices: list[str] = []
    plan_file = plan_of_run(journal, plan_path, records, notices)
    view = None
    if plan_file is not None:
        view = plan_view(plan_file, run.cap_bytes_per_sec or 50e6,
                         concurrency=run.header.concurrency,
                         quota_window_seconds=run.header.quota_window_seconds)
    measured = (measured_copy_rates(prometheus, run.started_at, run.elapsed, run.target_brokers,
                                    run.header.queries, notices) if prometheus else None)
    page = render_report(title=f"Run of {journal.name}", plan=view, run=run, measured=measured,
                         notices=notices, generated_at=_now_text())
    write_report(path, page)
    say(f"report: {path}", err_console)
