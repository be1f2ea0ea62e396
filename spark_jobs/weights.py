"""The weights job: per-partition traffic quantiles, hourly profile and size growth from history.

`transform` is a pure DataFrame -> DataFrame function with a declared output schema; `main` only
checks and reads the history and writes the weights file (both in spark_jobs/weights_io.py).

Samples (what a history row counts as; real histories have gaps, repeats and counter glitches):
- a row without ts, topic or a partition in 0..2^31-1 cannot be placed and is skipped;
- a rate that is negative, NaN or infinite (a counter reset or a broken exporter) is not a
  measurement: it counts as missing, like null; so is a negative or non-finite size;
- with the history's step (from `_notes.json`, from `--step`, or, for a history without notes,
  the most common spacing of a partition's samples: spark_jobs/grid.py), ts is snapped to the
  nearest point of the grid start + k * step, so jittered or unaligned timestamps become
  their step;
- rows of one partition at the same (snapped) ts are one sample, each column the largest of
  their valid values (a repeated export, overlapping chunks); row order never matters;
- a missing step is unknown, not zero traffic: nothing is filled in. A partition's weights come
  from the steps where it has rows, so a partition created mid-window is weighed by its traffic
  since then; a deleted one still gets a row (the planner ignores weights of partitions the
  cluster no longer has).

Definitions (the planner and the tests rely on them):
- quantile: exact, linear interpolation between closest ranks over the valid samples (the
  same as numpy's and pandas' default and Spark's exact `percentile`): with the samples sorted,
  position = q * (n - 1), value = v[floor] + (position - floor) * (v[floor + 1] - v[floor]).
  So one absurd spike does not move the q-quantile once n >= 1 + 1 / (1 - q) (21 samples for
  0.95); with fewer samples (an hourly value from a short window) it can.
- hourly profile: 24 values, index = hour of day in UTC of `ts`; an hour with no valid sample
  gets null (unknown is not zero traffic).
- peak_hour: the hour with the highest bytes-in quantile, earliest on ties; null hours are
  skipped; null when that highest value is 0 (a partition without traffic has no peak).
- size_bytes: the valid size with the latest `ts` (null when the partition never had one).
- requests_per_sec: the quantile of the produce and fetch requests a second, like the byte
  rates; null when the history has no such column (written before it had one) or no valid
  value for the partition.
- size_growth_bytes_per_day: least-squares slope of size over time, per day, over the samples
  with a valid size; 0.0 with fewer than 2 distinct timestamps (no growth can be measured, and
  the planner's weights reader wants a number); null when the partition never had a size, and
  when its sizes span less than `min_growth_span_seconds` (0 in WeightsParams, 1 day from the
  CLI and `main`): a slope over minutes, projected over a plan's horizon of days, would turn a
  burst into gigabytes a day. The planner reads null growth as none.

Performance: the history is shuffled once, hash-partitioned by (topic, partition) (not by topic:
a topic with many partitions spreads over all tasks); the de-duplication, the hourly and the
per-partition aggregations reuse that distribution, so no other exchange of raw rows happens.
The de-duplication is one hash aggregation over the rows (about a tenth of the job's time on the
1M-row benchmark). Quantiles come from sorted primitive arrays (no Python UDF, no boxed map).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kafka_rebalance.core.errors import InputError, RebalanceError
from spark_jobs.aggregates import KEYS, MICROS_PER_DAY, MICROS_PER_HOUR, per_hour, per_partition
from spark_jobs.grid import (
    HistorySpan,
    epoch_micros,
    finer_than_the_notes,
    grid_notes,
    history_span,
    resolve_grid,
    span_notes,
)
from spark_jobs.weights_io import (
    OPTIONAL_COLUMNS,
    REQUESTS,
    CheckedHistory,
    HistoryInputError,
    check_local_history,
    check_output_path,
    load_history,
    local_directory,
    read_failure,
    write_weights,
)
from topology.history import (
    MIN_GROWTH_SPAN_SECONDS,
    parse_duration,
    parse_min_growth_span,
)
from topology.model import INT32_MAX, TOPIC_CHARS, TOPIC_MAX_LENGTH
from topology.units import MAX_QUANTITY, duration_text

HISTORY_SCHEMA = StructType(
    [
        StructField("ts", TimestampType(), nullable=False),
        StructField("topic", StringType(), nullable=False),
        StructField("partition", IntegerType(), nullable=False),
        StructField("bytes_in_per_sec", DoubleType(), nullable=True),
        StructField("bytes_out_per_sec", DoubleType(), nullable=True),
        StructField("size_bytes", LongType(), nullable=True),
    ]
)
"""The history dataset's required columns (one row per partition per step). `rebalance history
export` also writes `requests_per_sec` (a double), which histories written before lack."""

WEIGHTS_SCHEMA = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("partition", IntegerType(), nullable=False),
        StructField("bytes_in_per_sec", DoubleType(), nullable=True),
        StructField("bytes_out_per_sec", DoubleType(), nullable=True),
        StructField("hourly_bytes_in_per_sec", ArrayType(DoubleType(), True), nullable=False),
        StructField("hourly_bytes_out_per_sec", ArrayType(DoubleType(), True), nullable=False),
        StructField("peak_hour", IntegerType(), nullable=True),
        StructField("size_bytes", LongType(), nullable=True),
        StructField("size_growth_bytes_per_day", DoubleType(), nullable=True),
        StructField("requests_per_sec", DoubleType(), nullable=True),
    ]
)
"""One row per partition: the rates the planner uses, the hourly profile, size and growth."""

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_NUMBER = (DoubleType, FloatType, *_INTEGRAL, NullType)
_ACCEPTED_TYPES: dict[str, tuple[type[DataType], ...]] = {
    "ts": (TimestampType, TimestampNTZType),
    "topic": (StringType,),
    "partition": _INTEGRAL,
    "bytes_in_per_sec": _NUMBER,
    "bytes_out_per_sec": _NUMBER,
    "size_bytes": _NUMBER,
    REQUESTS: _NUMBER,  # optional
}
_MAX_SIZE = 9.2e18  # below 2^63: larger floating sizes are not a long, so not a size


@dataclass(frozen=True, slots=True)
class WeightsParams:
    """Parameters of the weights transform: the quantile, the history's sampling grid, and the
    least span of sizes growth is measured over.

    With `step_seconds` set, timestamps snap to grid_start_seconds + k * step_seconds (unix
    seconds); without it, only rows with exactly the same ts are one sample.
    """

    quantile: float = 0.95
    step_seconds: float | None = None
    grid_start_seconds: float = 0.0
    min_growth_span_seconds: float = 0.0
    # samples stamped after this (unix seconds; None: now) plus FUTURE_SLACK_SECONDS are left
    # out: a bad clock's, they would pose as the latest size and bend the growth
    now_seconds: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.quantile <= 1.0:
            raise InputError(f"--quantile must be between 0 and 1, got {self.quantile}")
        if self.step_seconds is not None and not 0 < self.step_seconds < math.inf:
            raise InputError(f"the history step must be positive, got {self.step_seconds}")
        if not math.isfinite(self.grid_start_seconds):
            raise InputError(f"the history start must be a time, got {self.grid_start_seconds}")
        if not 0 <= self.min_growth_span_seconds < math.inf:
            raise InputError("--min-growth-span must be a duration >= 0, got "
                             f"{self.min_growth_span_seconds}")


def validate_history(history: DataFrame) -> None:
    """Raise HistoryInputError naming the first missing or mistyped column."""
    fields = {f.name: f.dataType for f in history.schema.fields}
    for name, accepted in _ACCEPTED_TYPES.items():
        if name not in fields and name in OPTIONAL_COLUMNS:
            continue
        if name not in fields:
            raise HistoryInputError(
                f"history has no column {name!r} (columns: {', '.join(sorted(fields)) or 'none'});"
                " expected ts, topic, partition, bytes_in_per_sec, bytes_out_per_sec, size_bytes"
            )
        if not isinstance(fields[name], accepted):
            wanted = " or ".join(t.typeName() for t in accepted)
            raise HistoryInputError(
                f"history column {name!r} has type {fields[name].simpleString()}, expected {wanted}"
            )


def transform(history: DataFrame, params: WeightsParams) -> DataFrame:
    """Per-partition weights from a history DataFrame (see the module docstring for definitions).

    Raises HistoryInputError on missing or mistyped columns; emptiness is checked before (by
    the footers) or after (no output row), because checking it here would run a job.
    """
    validate_history(history)
    samples = _samples(history, params).repartition(*KEYS)
    # One sample per (partition, ts); the distribution by (topic, partition) is kept.
    deduplicated = samples.groupBy(*KEYS, "ts_micros").agg(
        F.max("bytes_in").alias("bytes_in"),
        F.max("bytes_out").alias("bytes_out"),
        F.max("size").alias("size"),
        F.max("requests").alias("requests"),
    )
    hour = F.floor(F.pmod("ts_micros", F.lit(MICROS_PER_DAY)) / MICROS_PER_HOUR)
    rows = deduplicated.withColumn("hour", hour.cast(IntegerType()))
    weights = per_partition(per_hour(rows, params.quantile), params.quantile,
                            params.min_growth_span_seconds)
    return weights.select(
        *[F.col(f.name).cast(f.dataType).alias(f.name) for f in WEIGHTS_SCHEMA.fields]
    )


def _samples(history: DataFrame, params: WeightsParams) -> DataFrame:
    """Placeable rows with snapped timestamps; invalid values become null (missing)."""
    micros = epoch_micros(history)
    if params.step_seconds is not None:
        micros = _snapped(micros, params.step_seconds, params.grid_start_seconds)
    partition = F.col("partition")
    placeable = (F.col("ts").isNotNull() & F.col("topic").isNotNull()
                 & partition.between(0, INT32_MAX))
    return history.where(placeable).select(
        F.col("topic"),
        partition.cast(IntegerType()).alias("partition"),
        micros.alias("ts_micros"),
        _valid_rate("bytes_in_per_sec").alias("bytes_in"),
        _valid_rate("bytes_out_per_sec").alias("bytes_out"),
        _valid_size(history).alias("size"),
        (_valid_rate(REQUESTS) if REQUESTS in history.columns
         else F.lit(None).cast(DoubleType())).alias("requests"),
    )


def _valid_rate(name: str) -> Column:
    """The rate when it is a number from 0 to MAX_QUANTITY (what plan --weights reads), else
    null like a NaN or a negative sample (Spark orders NaN above +inf)."""
    rate = F.col(name).cast(DoubleType())
    return F.when((rate >= 0) & (rate <= F.lit(MAX_QUANTITY)), rate)


def _valid_size(history: DataFrame) -> Column:
    """size_bytes as whole bytes when it is a finite number >= 0, else null."""
    if isinstance(history.schema["size_bytes"].dataType, _INTEGRAL):
        size = F.col("size_bytes").cast(LongType())
        return F.when(size >= 0, size)
    size = F.col("size_bytes").cast(DoubleType())
    return F.when((size >= 0) & (size < _MAX_SIZE), F.round(size).cast(LongType()))


def _snapped(micros: Column, step_seconds: float, start_seconds: float) -> Column:
    """The nearest grid point start + k * step (in microseconds), by integer arithmetic."""
    step = max(1, round(step_seconds * 1_000_000))
    offset = round(start_seconds * 1_000_000) % step
    shifted = micros - offset + step // 2
    return shifted - F.pmod(shifted, F.lit(step)) + offset


@dataclass(frozen=True, slots=True)
class WeightsResult:
    """What a weights run wrote, and what the user should know about the history."""

    partitions: int
    notes: tuple[str, ...]


Phase = Callable[[str], None]


def _no_phase(name: str) -> None:
    """Default phase sink: say nothing."""


def compute(
    spark: SparkSession, history_path: str, out_path: str, params: WeightsParams,
    checked: CheckedHistory | None = None, step_seconds: float | None = None,
    on_phase: Phase = _no_phase,
) -> WeightsResult:
    """Read, find the sampling grid, transform and write; the partitions written and notes.

    The grid is `step_seconds` (--step) if given, else the history's notes, else inferred from
    the data (spark_jobs/grid.py). `checked` is the result of checking a local history before
    Spark started (see `run_job`). A file Spark cannot read is a HistoryInputError, one line.
    """
    try:
        on_phase("reading the history")
        history, notes = load_history(spark, history_path, checked)
        validate_history(history)
        span = history_span(history)
        history, span, ahead = _without_future(history, span, params.now_seconds)
        if notes is None and step_seconds is None:
            on_phase("finding the sampling grid")
        grid = resolve_grid(history, notes, step_seconds, span)
        on_grid = replace(params, step_seconds=grid.step_seconds,
                          grid_start_seconds=grid.start_seconds)
        on_phase("computing weights")
        computed = transform(history, on_grid)
        weights = computed.where(_kafka_topic(F.col("topic"))).cache()
    except Exception as exc:  # a Spark or Py4J error: only file-read failures are translated
        raise _translated(exc) from None
    try:
        count = weights.count()
        unnamed = computed.where(~_kafka_topic(F.col("topic"))).count()
        if count == 0 and unnamed:
            raise HistoryInputError(f"history dataset {history_path!r}: every topic in it has "
                                    "a name Kafka does not allow (a broken export's labels?)")
        if count == 0:
            raise HistoryInputError(f"history dataset {history_path!r} has no rows with a ts, "
                                    "a topic and a partition")
        without_growth = (weights.where(F.col("size_growth_bytes_per_day").isNull()
                                        & F.col("size_bytes").isNotNull()).count()
                          if params.min_growth_span_seconds > 0 else 0)
        on_phase(f"writing {out_path}")
        write_weights(weights, out_path)
    except Exception as exc:
        raise _translated(exc) from None
    finally:
        weights.unpersist()
    messages = grid_notes(grid, notes) + finer_than_the_notes(grid, span)
    if span is not None and span.unplaceable:
        messages.append(f"{span.unplaceable} row(s) of the history have a partition number "
                        f"Kafka cannot have (negative, or over {INT32_MAX}): left out")
    if ahead:
        messages.append(f"{ahead} sample(s) are stamped more than "
                        f"{duration_text(FUTURE_SLACK_SECONDS, compact=True)} after now (a "
                        "clock set wrong where they were recorded?): left out, so the latest "
                        "size and the growth come from the rest")
    messages += span_notes(span, params.min_growth_span_seconds, count, without_growth)
    if unnamed:
        messages.append(f"{unnamed} partition(s) of the history have a topic name Kafka does "
                        "not allow (empty, '.', '..', over 249 characters, or characters "
                        "other than letters, digits, '.', '_' and '-'): left out, so the "
                        "planner reads the rest")
    return WeightsResult(count, tuple(messages))


FUTURE_SLACK_SECONDS = 300.0  # clocks of the recording hosts may run this far ahead


def _without_future(history: DataFrame, span: HistorySpan | None, now: float | None
                    ) -> tuple[DataFrame, HistorySpan | None, int]:
    """The history without samples stamped after now (+ FUTURE_SLACK_SECONDS), its span, and
    how many were left out. A pass over the data only when the span reaches past the cut."""
    cut = (time.time() if now is None else now) + FUTURE_SLACK_SECONDS
    if span is None or span.last_seconds <= cut:
        return history, span, 0
    micros = epoch_micros(history)
    limit = F.lit(int(cut * 1_000_000))
    ahead = history.where(micros > limit).count()
    kept = history.where(micros.isNull() | (micros <= limit))
    return kept, history_span(kept), ahead


def _kafka_topic(topic: Column) -> Column:
    """True for a topic name Kafka accepts (topology.model.is_topic_name, in Spark)."""
    return (topic.rlike(f"^{TOPIC_CHARS}$") & (F.length(topic) <= TOPIC_MAX_LENGTH)
            & ~topic.isin(".", ".."))


def _translated(exc: Exception) -> Exception:
    """A RebalanceError as it is, a Spark failure to read a history file as one line."""
    if isinstance(exc, RebalanceError):
        return exc
    failure = read_failure(exc)
    return exc if failure is None else failure


def run(
    spark: SparkSession, history_path: str, out_path: str, params: WeightsParams,
    checked: CheckedHistory | None = None,
) -> int:
    """Read, transform and write (see `compute`); returns the number of partitions written."""
    return compute(spark, history_path, out_path, params, checked).partitions


def check_history(history_path: str) -> CheckedHistory | None:
    """Check a local history without Spark (None for other file systems: Spark reads those)."""
    local = local_directory(history_path)
    return check_local_history(local) if local is not None else None


def run_job(
    history_path: str, out_path: str, params: WeightsParams, master: str | None = None,
    driver_memory: str | None = None, step_seconds: float | None = None,
) -> WeightsResult:
    """Check a local history before Spark starts (bad input shows no JVM output), then run.

    Uses the active session if there is one (spark-submit), else starts and stops its own.
    """
    from spark_jobs.session import build_session

    check_output_path(history_path, out_path)
    checked = check_history(history_path)
    started_here = SparkSession.getActiveSession() is None
    spark = build_session(master, driver_memory=driver_memory)
    try:
        return compute(spark, history_path, out_path, params, checked, step_seconds)
    finally:
        if started_here:
            spark.stop()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Flags of `python -m spark_jobs.weights` (also what spark-submit passes)."""
    parser = argparse.ArgumentParser(description="Per-partition weights from traffic history.")
    parser.add_argument("--history", required=True, help="history Parquet dataset directory")
    parser.add_argument("--out", required=True, help="weights file (.json: JSON lines)")
    parser.add_argument("--quantile", type=float, default=0.95, help="rate quantile (0..1)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default local[*], or spark-submit's --master)")
    parser.add_argument("--step", default=None,
                        help="sampling step of the history (60s, 5m); default: its "
                             "_notes.json, else inferred from the data")
    parser.add_argument("--min-growth-span",
                        default=duration_text(MIN_GROWTH_SPAN_SECONDS, compact=True),
                        help="least span of sizes to measure growth from (default %(default)s; "
                             "0 for any)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for spark-submit and `python -m`: exit code 0, or the error's exit code."""
    args = parse_args(argv)
    try:
        step = parse_duration(args.step, "--step") if args.step is not None else None
        params = WeightsParams(quantile=args.quantile,
                               min_growth_span_seconds=parse_min_growth_span(args.min_growth_span))
        result = run_job(args.history, args.out, params, args.master, step_seconds=step)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote weights for {result.partitions} partitions to {args.out}")
    for message in result.notes:
        print(f"note: {message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
