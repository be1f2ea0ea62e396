"""`rebalance history export` and `rebalance weights`: traffic history in, placement weights out.

Parsing and rendering only: the export lives in topology/history.py, the job in
spark_jobs/weights.py. Both are imported only when their command runs (pandas, Arrow and the
Prometheus client for `export`, PySpark for `weights`), so other commands start fast.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from commands.outputs import (
    FORCE_HELP,
    check_new_directory,
    check_output,
    no_empty_directory_left,
    weights_output,
)
from commands.render import console, err_console, note, say
from core.errors import InputError

history_app = typer.Typer(
    help="Traffic history: export per-partition rates and sizes from Prometheus.",
    no_args_is_help=True,
)


@history_app.command("export")
def export(
    prometheus: Annotated[str, typer.Option(help="Prometheus base URL, e.g. http://127.0.0.1:9090")],
    out: Annotated[Path, typer.Option(help="Output directory (new or empty): Parquet dataset.")],
    since: Annotated[str, typer.Option(help="Window length back from now (7d, 12h, 90m).")] = "7d",
    step: Annotated[str, typer.Option(help="Sample spacing (60s, 5m).")] = "60s",
    rate_window: Annotated[
        str | None, typer.Option(help="PromQL rate() window; default max(step, 1m).")
    ] = None,
) -> None:
    """Export per-partition bytes in/out rates and sizes over a window as a Parquet dataset."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from topology.history import (
        LARGE_EXPORT_QUERIES,
        MAX_POINTS_PER_SERIES,
        HistoryQueries,
        PrometheusRange,
        check_export_size,
        export_history,
        parse_duration,
    )

    check_new_directory(out, "--out")
    window_s = parse_duration(since, "--since")
    step_s = parse_duration(step, "--step")
    if step_s < 1 or step_s != int(step_s):
        raise InputError(f"--step must be a whole number of seconds, at least 1s; got {step!r}")
    if window_s < step_s:
        raise InputError(f"--since {since} is shorter than --step {step}: the window would hold "
                         "no sample; lengthen --since or shorten --step")
    estimate = check_export_size(window_s, step_s, since, step)
    end = math.floor(time.time() / step_s) * step_s
    start = end - math.floor(window_s / step_s) * step_s
    rate_window_text = rate_window or f"{int(max(step_s, 60))}s"
    parse_duration(rate_window_text, "--rate-window")
    queries = HistoryQueries.defaults(rate_window_text)
    source = PrometheusRange(prometheus)
    if estimate.queries >= LARGE_EXPORT_QUERIES:
        note(f"a large export: {estimate.steps:,} samples per series, {estimate.queries:,} "
             f"range queries ({estimate.chunks:,} chunks of up to {MAX_POINTS_PER_SERIES:,} "
             "steps); a longer --step makes it faster")
    with Progress(
        TextColumn("querying Prometheus"), BarColumn(), MofNCompleteColumn(),
        TextColumn("chunks"), TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("export", total=None)

        def on_chunk(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        with no_empty_directory_left(out):
            summary = export_history(source, start, end, step_s, out, queries, on_chunk)
    say(f"wrote {summary.rows} rows for {summary.partitions} partitions in "
        f"{len(summary.files)} files ({summary.chunks} query chunks) to {out}")
    for message in summary.notes:
        note(message)


_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|(spark|k8s|mesos)://\S+|yarn")
_MEMORY = re.compile(r"\d+[kmgtp]?b?", re.IGNORECASE)


def check_spark_flags(master: str, driver_memory: str | None) -> None:
    """--master and --driver-memory in Spark's forms, checked before the JVM starts."""
    if not _MASTER.fullmatch(master):
        raise InputError(f"--master {master!r}: give local[*], local[N], spark://HOST:PORT, "
                         "yarn or k8s://URL")
    if driver_memory is not None and not _MEMORY.fullmatch(driver_memory):
        raise InputError(f"--driver-memory {driver_memory!r}: give a size such as 512m or 6g")


def check_weights_paths(history: Path, out: Path, force: bool = False) -> None:
    """The weights file must not overwrite the history dataset or be written into it, and
    replaces an existing file only if it is a weights output (or with --force)."""
    if "://" in str(history) or "://" in str(out):
        return  # a remote file system: Spark checks it
    source, target = history.resolve(), out.resolve()
    if target == source or source in target.parents or target in source.parents:
        raise InputError(f"--out {out} would overwrite or sit inside the history dataset "
                         f"{history}; write the weights elsewhere")
    from spark_jobs.weights_io import replaceable_output

    if not replaceable_output(target):
        raise InputError(f"--out {out} is a directory with other files in it; give the path of "
                         "the weights file to write (an existing directory is never deleted)")
    check_output(weights_output(out), {"--history": history}, force)


def parse_weights_durations(step: str | None, min_growth_span: str) -> tuple[float | None, float]:
    """--step (None: from the notes or the data) and --min-growth-span (0: any span)."""
    from topology.history import parse_duration, parse_min_growth_span

    step_s = parse_duration(step, "--step") if step is not None else None
    return step_s, parse_min_growth_span(min_growth_span)


class JobStatus:
    """The weights job's phase and elapsed time on stderr: one live line on a terminal, else
    one line per phase (so a pipe or a log shows the job is alive)."""

    def __init__(self) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.started = time.perf_counter()
        self.live = err_console.is_terminal
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=err_console, transient=True,
                                 disable=not self.live)
        self.task = self.progress.add_task("", total=None)

    def phase(self, name: str) -> None:
        if self.live:
            self.progress.update(self.task, description=escape(name))
        else:
            say(f"[{time.perf_counter() - self.started:5.1f}s] {name}", err_console)


@contextmanager
def job_status() -> Iterator[JobStatus]:
    """A JobStatus shown while the block runs (the live line goes when it ends)."""
    status = JobStatus()
    with status.progress:
        yield status


def weights(
    history: Annotated[Path, typer.Option(help="History dataset (from `history export`).")],
    out: Annotated[Path, typer.Option(help="Weights file: Parquet, or JSON lines if *.json.")],
    quantile: Annotated[float, typer.Option(help="Rate quantile the planner uses (0..1).")] = 0.95,
    step: Annotated[str | None, typer.Option(
        help="Sampling step of the history (60s, 5m). Default: its _notes.json, else the most "
        "common spacing of a partition's samples (a history from your own metrics store).")
    ] = None,
    min_growth_span: Annotated[str, typer.Option(
        help="Least span of a partition's sizes to measure growth from; shorter ones get no "
        "growth (a burst of minutes is no daily growth). 0 for any span.")] = "1d",
    master: Annotated[str, typer.Option(help="Spark master: local[*], spark://host:7077, ...")] = (
        "local[*]"
    ),
    driver_memory: Annotated[
        str | None, typer.Option(help="Spark driver memory, e.g. 6g (local mode does the work).")
    ] = None,
    force: Annotated[bool, typer.Option(
        "--force", help=FORCE_HELP.format(what="weights file"))] = False,
) -> None:
    """Compute per-partition weights (rate quantiles, hourly profile, size growth) with Spark.

    An existing --out is replaced only if it is a weights file or Spark output directory this
    tool wrote (or with --force; a directory with other files is never replaced).
    """
    from spark_jobs.session import build_session
    from spark_jobs.weights import WeightsParams, check_history, compute

    step_s, min_growth_s = parse_weights_durations(step, min_growth_span)
    params = WeightsParams(quantile=quantile, min_growth_span_seconds=min_growth_s)
    check_weights_paths(history, out, force)
    check_spark_flags(master, driver_memory)
    checked = check_history(str(history))  # a local history's notes and files, before the JVM
    with job_status() as status:
        status.phase(f"starting Spark ({master})")
        try:
            spark = build_session(master, driver_memory=driver_memory)
        except Exception as exc:  # the JVM did not start: PySpark raises its own errors
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise InputError(f"Spark did not start with --master {master}: {first}; check "
                             "--master, --driver-memory and that Java is installed") from None
        try:
            result = compute(spark, str(history), str(out), params, checked, step_s,
                             on_phase=status.phase)
        finally:
            spark.stop()
    elapsed = time.perf_counter() - status.started
    say(f"wrote weights for {result.partitions} partitions to {out} ({elapsed:.1f}s)")
    for message in result.notes:
        note(message)
