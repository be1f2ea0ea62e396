"""`rebalance history export` and `rebalance weights`: traffic history in, placement weights out.

Parsing and rendering only: the use cases are kafka_rebalance/usecases/history.py (over
topology/history.py and spark_jobs/weights.py, imported only when their command runs, so other
commands start fast).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kafka_rebalance.commands.render import FORCE_HELP, console, err_console, note, say
from kafka_rebalance.files.outputs import (
    check_new_directory,
    check_output,
    no_empty_directory_left,
)
from kafka_rebalance.usecases.history import (
    ExportSettings,
    WeightsSettings,
    check_weights_settings,
    compute_weights,
    export_history_window,
    weights_output,
)

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

    check_new_directory(out, "--out")
    settings = ExportSettings(prometheus=prometheus, out=out, since=since, step=step,
                              rate_window=rate_window)
    with Progress(
        TextColumn("querying Prometheus"), BarColumn(), MofNCompleteColumn(),
        TextColumn("chunks"), TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("export", total=None)

        def on_chunk(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        with no_empty_directory_left(out):
            summary = export_history_window(settings, on_chunk, note)
    say(f"wrote {summary.rows} rows for {summary.partitions} partitions in "
        f"{len(summary.files)} files ({summary.chunks} query chunks) to {out}")
    for message in summary.notes:
        note(message)


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
    settings = WeightsSettings(history=history, out=out, quantile=quantile, step=step,
                               min_growth_span=min_growth_span, master=master,
                               driver_memory=driver_memory)
    checked = check_weights_settings(settings, lambda: check_output(
        weights_output(out), {"--history": history}, force))
    with job_status() as status:
        result = compute_weights(settings, checked, status.phase)
    elapsed = time.perf_counter() - status.started
    say(f"wrote weights for {result.partitions} partitions to {out} ({elapsed:.1f}s)")
    for message in result.notes:
        note(message)
