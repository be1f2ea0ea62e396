"""A history's sampling grid (start + k * step) and time span, and what the job says about them.

The grid comes from `_notes.json` (written by `rebalance history export`), from `--step`, or,
for a history the user brings from their own metrics store without notes, from the data: the
most common spacing between consecutive samples of one partition (spacings rounded to whole
seconds, or milliseconds below a second), allowing for jitter: the median of the spacings
within -20%/+25% of the most common one, taken as a round step (15s, 1m, 5m, ...) when within
5% of one. The grid starts at the first sample. The Spark parts only aggregate; choosing the
step and wording the notes are pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, TimestampNTZType

from spark_jobs.weights_io import HistoryNotes
from topology.history import MIN_GROWTH_SPAN_SECONDS
from topology.model import INT32_MAX
from topology.units import duration_text

_MICROS = 1_000_000
_TOP_SPACINGS = 1000
IRREGULAR_SHARE = 0.5
"""Below this share of spacings near the inferred step the data is called irregular."""
_ROUND_STEPS_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21_600,
                  43_200, 86_400)
_NEAR = (0.8, 1.25)  # spacings counted as the same step, jittered
_ROUND_TOLERANCE = 0.05


class GridSource(StrEnum):
    """Where the sampling grid came from."""

    NOTES = "the history's _notes.json"
    FLAG = "--step"
    DATA = "the data"
    NONE = "nowhere"


@dataclass(frozen=True, slots=True)
class SamplingGrid:
    """Timestamps snap to start_seconds + k * step_seconds (no snapping when step is None).

    `share` is, for a grid inferred from the data, the fraction of consecutive samples of a
    partition that are one step apart.
    """

    step_seconds: float | None
    start_seconds: float
    source: GridSource
    share: float | None = None


@dataclass(frozen=True, slots=True)
class HistorySpan:
    """The first and last sample time of a history (unix seconds)."""

    first_seconds: float
    last_seconds: float
    times: int = 0  # distinct sample times, about (0: not counted)
    # rows whose partition is no Kafka partition number (negative, or over 2^31 - 1)
    unplaceable: int = 0

    @property
    def seconds(self) -> float:
        return self.last_seconds - self.first_seconds


def epoch_micros(history: DataFrame) -> Column:
    """Microseconds since the epoch of `ts`, independent of the session time zone."""
    if isinstance(history.schema["ts"].dataType, TimestampNTZType):
        return F.expr("timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', ts)")
    return F.unix_micros(F.col("ts"))


def history_span(history: DataFrame) -> HistorySpan | None:
    """First and last `ts` of the history (one pass over the ts column); None without rows."""
    micros = epoch_micros(history)
    partition = F.col("partition")
    bad = partition.isNotNull() & ~partition.between(0, INT32_MAX)
    row = history.select(F.min(micros).alias("first"), F.max(micros).alias("last"),
                         F.approx_count_distinct(micros).alias("times"),
                         F.sum(F.when(bad, 1).otherwise(0)).alias("bad")).first()
    if row is None or row["first"] is None:
        return None
    return HistorySpan(row["first"] / _MICROS, row["last"] / _MICROS, int(row["times"]),
                       int(row["bad"] or 0))


def spacing_counts(history: DataFrame) -> tuple[list[tuple[int, int]], int]:
    """The most common spacings between consecutive distinct samples of one partition, in
    microseconds (rounded), with their counts; and the number of spacings in all."""
    micros = epoch_micros(history)
    samples = (history.where(F.col("ts").isNotNull() & F.col("topic").isNotNull()
                             & F.col("partition").isNotNull())
               .select("topic", "partition", micros.alias("t")).distinct())
    order = Window.partitionBy("topic", "partition").orderBy("t")
    gap = F.col("t") - F.lag("t").over(order)
    rounded = F.when(gap >= _MICROS, F.round(gap / _MICROS) * _MICROS).otherwise(
        F.round(gap / 1000) * 1000).cast(LongType())
    gaps = samples.select(rounded.alias("spacing")).where(F.col("spacing") > 0)
    counted = gaps.groupBy("spacing").count().cache()
    try:
        total_row = counted.agg(F.sum("count").alias("total")).first()
        total = int(total_row["total"] or 0) if total_row is not None else 0
        top = counted.orderBy(F.desc("count"), "spacing").limit(_TOP_SPACINGS).collect()
    finally:
        counted.unpersist()
    return [(int(r["spacing"]), int(r["count"])) for r in top], total


def pick_step(counts: Sequence[tuple[int, int]], total: int) -> tuple[float, float] | None:
    """The step in seconds and the share of spacings near it (see the module docstring), from
    (spacing in microseconds, count) pairs; None when there is no spacing (no partition has two
    samples). The most common spacing is the smaller one on ties."""
    if not counts or total <= 0:
        return None
    mode, _ = min(counts, key=lambda item: (-item[1], item[0]))
    near = sorted((s, c) for s, c in counts if _NEAR[0] * mode <= s <= _NEAR[1] * mode)
    in_cluster = sum(c for _, c in near)
    seen = 0
    median = mode
    for spacing, count in near:
        seen += count
        if 2 * seen >= in_cluster:
            median = spacing
            break
    step = median / _MICROS
    for candidate in _ROUND_STEPS_S:
        if abs(candidate - step) <= _ROUND_TOLERANCE * candidate:
            step = float(candidate)
            break
    return step, in_cluster / total


def resolve_grid(history: DataFrame, notes: HistoryNotes | None, step_seconds: float | None,
                 span: HistorySpan | None) -> SamplingGrid:
    """The grid the job snaps to: --step (on the notes' start, else the first sample), else
    the notes, else inferred from the data."""
    first = span.first_seconds if span is not None else 0.0
    if step_seconds is not None:
        start = notes.start_seconds if notes is not None else first
        return SamplingGrid(step_seconds, start, GridSource.FLAG)
    if notes is not None:
        return SamplingGrid(notes.step_seconds, notes.start_seconds, GridSource.NOTES)
    picked = pick_step(*spacing_counts(history))
    if picked is None:
        return SamplingGrid(None, 0.0, GridSource.NONE)
    step, share = picked
    return SamplingGrid(step, first, GridSource.DATA, share)


FINER_FACTOR = 1.5  # sample times over what the notes' step allows before it is told


def _iso(unix_seconds: float) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).isoformat(timespec="seconds")


def grid_notes(grid: SamplingGrid, notes: HistoryNotes | None) -> list[str]:
    """What the user should know about the grid: inferred, overridden, or missing."""
    if grid.source is GridSource.NONE:
        return ["the history has no _notes.json and no partition has two samples: no sampling "
                "grid, so only rows with equal timestamps count as one sample"]
    step = duration_text(grid.step_seconds or 0.0, compact=True)
    if grid.source is GridSource.DATA:
        share = grid.share or 0.0
        message = (f"the history has no _notes.json: sampling grid from the data, step {step} "
                   f"(the spacing of {share:.0%} of consecutive samples, give or take jitter), "
                   "start "
                   f"{_iso(grid.start_seconds)}")
        if share < IRREGULAR_SHARE:
            message += "; the samples are irregular: pass --step to set the grid"
        return [message]
    if (grid.source is GridSource.FLAG and notes is not None
            and notes.step_seconds != grid.step_seconds):
        given = duration_text(notes.step_seconds, compact=True)
        return [f"--step {step} replaces the step {given} of the history's _notes.json"]
    return []


def finer_than_the_notes(grid: SamplingGrid, span: HistorySpan | None) -> list[str]:
    """A note when the data has many more sample times than the notes' step allows (files of
    two exports in one directory, say): the samples within one step count as one, their
    maximum, which lifts the quantile."""
    if (grid.source is not GridSource.NOTES or span is None or not grid.step_seconds
            or span.seconds <= 0):
        return []
    allowed = span.seconds / grid.step_seconds + 1
    if span.times <= FINER_FACTOR * allowed:
        return []
    every = duration_text(span.seconds / max(span.times - 1, 1), compact=True)
    return [f"the history has about {span.times} sample times over "
            f"{duration_text(span.seconds, compact=True)}, about one every {every}, but its "
            f"_notes.json says one every {duration_text(grid.step_seconds, compact=True)}: "
            "the samples within one step count as one (their maximum), which lifts the "
            "rates; pass --step with the data's step"]


def span_notes(span: HistorySpan | None, min_growth_span_seconds: float, partitions: int,
               without_growth: int) -> list[str]:
    """A note when the history is short (under a day) or some partitions' sizes are too short
    to measure growth from."""
    if span is None:
        return []
    out: list[str] = []
    if span.seconds < MIN_GROWTH_SPAN_SECONDS:
        message = (f"the history spans only {duration_text(span.seconds, compact=True)} "
                   f"({_iso(span.first_seconds)} to {_iso(span.last_seconds)}): the rates "
                   "describe that time only, and the hourly profile the hours it covers")
        if span.seconds < min_growth_span_seconds:
            return [message + f"; size growth is not extrapolated from less than "
                    f"{duration_text(min_growth_span_seconds, compact=True)}, so "
                    "size_growth_bytes_per_day is null (no growth) for every partition"]
        out.append(message)
    if without_growth and min_growth_span_seconds > 0:
        out.append(f"{without_growth} of {partitions} partitions have sizes over less than "
                   f"{duration_text(min_growth_span_seconds, compact=True)} (created late in the "
                   "history, "
                   "or sizes missing): their size_growth_bytes_per_day is null (no growth)")
    return out
