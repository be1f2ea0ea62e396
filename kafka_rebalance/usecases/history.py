"""Traffic history in, placement weights out: export per-partition rates and sizes from
Prometheus over a window (`export_history_window`), and compute the weights the planner reads
from such a history with Spark (`compute_weights`), over an --out that is new or a weights
output of this tool (`weights_output`).

Both check their settings before anything starts (a bad flag changes nothing on disk), and
report progress through the callbacks they are given; nothing here prints. pandas, Arrow,
the Prometheus client and PySpark are imported where they are used.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.outputs import Output

if TYPE_CHECKING:
    from spark_jobs.weights import WeightsParams, WeightsResult
    from spark_jobs.weights_io import CheckedHistory
    from topology.history import ExportSummary

Notify = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class ExportSettings:
    """Where the history comes from and goes, and its window, spacing and rate window."""

    prometheus: str
    out: Path
    since: str = "7d"
    step: str = "60s"
    rate_window: str | None = None  # default max(step, 1m)


def export_history_window(settings: ExportSettings, on_chunk: Callable[[int, int], None],
                          notify: Notify) -> ExportSummary:
    """Export the window ending now (aligned to the step) as a Parquet dataset in `out`."""
    from topology.history import (
        LARGE_EXPORT_QUERIES,
        MAX_POINTS_PER_SERIES,
        HistoryQueries,
        check_export_size,
        export_history,
        parse_duration,
    )

    window_s = parse_duration(settings.since, "--since")
    step_s = parse_duration(settings.step, "--step")
    if step_s < 1 or step_s != int(step_s):
        raise InputError("--step must be a whole number of seconds, at least 1s; got "
                         f"{settings.step!r}")
    if window_s < step_s:
        raise InputError(f"--since {settings.since} is shorter than --step {settings.step}: the "
                         "window would hold no sample; lengthen --since or shorten --step")
    estimate = check_export_size(window_s, step_s, settings.since, settings.step)
    end = math.floor(time.time() / step_s) * step_s
    start = end - math.floor(window_s / step_s) * step_s
    rate_window = settings.rate_window or f"{int(max(step_s, 60))}s"
    parse_duration(rate_window, "--rate-window")
    if estimate.queries >= LARGE_EXPORT_QUERIES:
        notify(f"a large export: {estimate.steps:,} samples per series, {estimate.queries:,} "
               f"range queries ({estimate.chunks:,} chunks of up to {MAX_POINTS_PER_SERIES:,} "
               "steps); a longer --step makes it faster")
    from topology.prom_source import PrometheusMetrics

    return export_history(PrometheusMetrics(settings.prometheus, timeout_s=60), start, end, step_s,
                          settings.out, HistoryQueries.defaults(rate_window), on_chunk)


_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|(spark|k8s|mesos)://\S+|yarn")
_MEMORY = re.compile(r"\d+[kmgtp]?b?", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class WeightsSettings:
    """The history to read, the weights file to write, and how to compute and where."""

    history: Path
    out: Path
    quantile: float = 0.95
    step: str | None = None  # None: from the history's notes, else its samples' spacing
    min_growth_span: str = "1d"
    master: str = "local[*]"
    driver_memory: str | None = None


def check_spark_flags(master: str, driver_memory: str | None) -> None:
    """--master and --driver-memory in Spark's forms, checked before the JVM starts."""
    if not _MASTER.fullmatch(master):
        raise InputError(f"--master {master!r}: give local[*], local[N], spark://HOST:PORT, "
                         "yarn or k8s://URL")
    if driver_memory is not None and not _MEMORY.fullmatch(driver_memory):
        raise InputError(f"--driver-memory {driver_memory!r}: give a size such as 512m or 6g")


def check_weights_paths(history: Path, out: Path) -> bool:
    """The weights file must not overwrite the history dataset or be written into it, nor
    replace a directory with other files (spark_jobs.weights_io.check_output_path). True when
    `out` is a local path (the caller then checks that it may replace what is there)."""
    from spark_jobs.weights_io import check_output_path

    return check_output_path(str(history), str(out)) is not None


def parse_weights_durations(step: str | None, min_growth_span: str) -> tuple[float | None, float]:
    """--step (None: from the notes or the data) and --min-growth-span (0: any span)."""
    from topology.history import parse_duration, parse_min_growth_span

    step_s = parse_duration(step, "--step") if step is not None else None
    return step_s, parse_min_growth_span(min_growth_span)


@dataclass(frozen=True)
class CheckedWeights:
    """What checking a weights job's settings found, for `compute_weights`."""

    step_s: float | None
    params: WeightsParams
    history: CheckedHistory | None


def check_weights_settings(settings: WeightsSettings,
                           may_replace: Callable[[], None]) -> CheckedWeights:
    """Every check before the JVM starts, in the order the operator reads them: durations,
    the output path (`may_replace` decides whether an existing local file may go), the Spark
    flags, then the history's notes and files."""
    from spark_jobs.weights import WeightsParams, check_history

    step_s, min_growth_s = parse_weights_durations(settings.step, settings.min_growth_span)
    params = WeightsParams(quantile=settings.quantile, min_growth_span_seconds=min_growth_s)
    if check_weights_paths(settings.history, settings.out):
        may_replace()
    check_spark_flags(settings.master, settings.driver_memory)
    return CheckedWeights(step_s, params, check_history(str(settings.history)))


def compute_weights(settings: WeightsSettings, checked: CheckedWeights,
                    on_phase: Notify) -> WeightsResult:
    """Start Spark, compute the weights into `out`, stop Spark."""
    from spark_jobs.session import build_session
    from spark_jobs.weights import compute

    on_phase(f"starting Spark ({settings.master})")
    try:
        spark = build_session(settings.master, driver_memory=settings.driver_memory)
    except Exception as exc:  # the JVM did not start: PySpark raises its own errors
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"Spark did not start with --master {settings.master}: {first}; "
                         "check --master, --driver-memory and that Java is installed") from None
    try:
        return compute(spark, str(settings.history), str(settings.out), checked.params,
                       checked.history, checked.step_s, on_phase=on_phase)
    finally:
        spark.stop()


def is_weights_output(path: Path) -> bool:
    """A weights output of this tool: a directory holding only what a Spark write leaves, or a
    file with the weights columns (its Parquet schema, or its first JSON line)."""
    from planner.weights import WEIGHT_COLUMNS
    from spark_jobs.weights_io import replaceable_output

    if path.is_dir():
        return replaceable_output(path)
    return set(WEIGHT_COLUMNS) <= _columns(path)


def _columns(path: Path) -> set[str]:
    """Column names of a Parquet file, or keys of the first line of a JSON lines file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with path.open("rb") as fh:
            if fh.read(4) == b"PAR1":
                return set(pq.read_schema(path).names)
            fh.seek(0)
            first = json.loads(fh.readline(1 << 20).decode("utf-8"))
    except (OSError, ValueError, RecursionError, pa.ArrowException):
        return set()
    return {str(key) for key in first} if isinstance(first, dict) else set()


def weights_output(path: Path) -> Output:
    return Output(path, "--out", "weights file", is_weights_output)
