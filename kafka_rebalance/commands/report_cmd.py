"""`--html PATH` of `plan`, `diff` and `status`: the review and the run as one HTML page.

The commands check the path before any work (`check_html`: never an input file, a directory
or a file of another kind) and write the page after their terminal output. The report modules
(jinja2, matplotlib, numpy) are imported only when a page is written, so `rebalance` starts
fast. Prometheus is optional for `status`: when it does not answer, the page says so and shows
what the journal alone tells.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from executor.config import AUTO, DEFAULT_QUOTA_WINDOW_SECONDS
from kafka_rebalance.commands.outputs import InputFiles, Output, check_output, refuse_inputs
from kafka_rebalance.commands.render import err_console, say
from kafka_rebalance.core.errors import InputError, MetricsError, RebalanceError
from kafka_rebalance.report.files import is_report_file

if TYPE_CHECKING:
    from executor.records import Record
    from kafka_rebalance.report.charts import Series
    from kafka_rebalance.report.run_view import RunView
    from planner.planfile import PlanFile

HtmlOption = Annotated[Path | None, typer.Option(
    "--html", metavar="PATH", help="Also write the report as one self-contained HTML page "
    "(charts inline, opens offline).")]
HtmlPrometheusOption = Annotated[str | None, typer.Option(
    "--prometheus", metavar="URL", help="With --html: draw each receiving broker's measured "
    "reassignment rate from this Prometheus (skipped, with a note on the page, when it does "
    "not answer).")]
MEASURED_POINTS = 600  # Prometheus samples per broker series on a status page


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

    view = plan_view(plan_file, rate_bytes_per_sec,
                     quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
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

    run = run_view(records, now=time.time())
    notices: list[str] = []
    plan_file = _plan_of_run(journal, plan_path, records, notices)
    view = None
    if plan_file is not None:
        rate = run.cap_bytes_per_sec or 50e6
        concurrency = run.settings.get("concurrency", 1)
        window = run.settings.get("quota_window_seconds", DEFAULT_QUOTA_WINDOW_SECONDS)
        view = plan_view(plan_file, rate,
                         concurrency=concurrency if concurrency == AUTO or (
                             isinstance(concurrency, int) and concurrency >= 1) else 1,
                         quota_window_seconds=float(window)
                         if isinstance(window, int | float) else DEFAULT_QUOTA_WINDOW_SECONDS)
    measured = _measured(prometheus, run, notices) if prometheus else None
    page = render_report(title=f"Run of {journal.name}", plan=view, run=run, measured=measured,
                         notices=notices, generated_at=_now_text())
    write_report(path, page)
    say(f"report: {path}", err_console)


def _plan_of_run(journal: Path, plan_path: Path | None, records: Sequence[Record],
                 notices: list[str]) -> PlanFile | None:
    """The plan file of the run, when it is there and holds the journal's moves."""
    from executor.journal import plan_beside, runs_plan
    from kafka_rebalance.files.planfile import read_plan

    candidate = plan_path if plan_path is not None else plan_beside(journal)
    if candidate is None or not candidate.is_file():
        notices.append("No plan file beside the journal (give PLAN.json): the page shows the "
                       "run only.")
        return None
    try:
        plan_file = read_plan(candidate)
    except RebalanceError as exc:
        notices.append(f"The plan {candidate} could not be read ({exc}): the page shows the "
                       "run only.")
        return None
    if not runs_plan(records, plan_file.moves):
        notices.append(f"The plan {candidate} holds other moves than the journal's run: the "
                       "page shows the run only.")
        return None
    return plan_file


def _measured(prometheus: str, run: RunView, notices: list[str]) -> Series | None:
    """Reassignment bytes in per receiving broker over the run, seconds from its start."""
    from topology import promql
    from topology.history import PrometheusRange

    if run.started_at is None or not run.target_brokers:
        return None
    queries = run.settings.get("queries")
    queries = queries if isinstance(queries, dict) else {}
    window = str(queries.get("window", promql.DEFAULT_RATE_WINDOW))
    label = str(queries.get("broker_label", "broker_id"))
    brokers = "|".join(str(b) for b in run.target_brokers)
    query = promql.render(promql.BROKER_REASSIGNMENT_IN_RATE, window=window,
                          selector=f'{label}=~"{brokers}"')
    start, end = run.started_at, run.started_at + max(run.elapsed, 1.0)
    step = max(1.0, math.ceil((end - start) / MEASURED_POINTS))
    try:
        series = PrometheusRange(prometheus, timeout_s=20).query_range(query, start, end, step)
    except (MetricsError, InputError) as exc:
        notices.append(f"Prometheus did not answer ({exc}): the copy rates are the journal's "
                       "alone.")
        return None
    measured: dict[int, list[tuple[float, float]]] = {}
    for labels, samples in series:
        raw = labels.get(label, "")
        if raw.isdigit():
            measured.setdefault(int(raw), []).extend(
                (t - start, v) for t, v in samples if math.isfinite(v))
    if not measured:
        notices.append(f"Prometheus has no reassignment series for the run ({query}): the "
                       "copy rates are the journal's alone.")
    return measured or None
