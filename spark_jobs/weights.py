"""The weights job: per-partition traffic quantiles, hourly profile and size growth from history.

`transform` is a pure DataFrame -> DataFrame function with a declared output schema; `main` only
parses flags, reads the history dataset and writes the weights file.

Definitions (the planner and the tests rely on them):
- quantile: exact, linear interpolation between closest ranks over the non-null samples (the
  same as numpy's and pandas' default and Spark's exact `percentile`): with the samples sorted,
  position = q * (n - 1), value = v[floor] + (position - floor) * (v[floor + 1] - v[floor]).
- hourly profile: 24 values, index = hour of day in UTC of `ts`; an hour with no samples gets
  null (unknown is not zero traffic).
- peak_hour: the hour with the highest bytes-in quantile, earliest on ties; null hours are skipped.
- size_bytes: the non-null size with the latest `ts` (null when the partition never had one).
- size_growth_bytes_per_day: least-squares slope of size over time, per day, over the rows whose
  size is not null; 0.0 with fewer than 2 distinct timestamps (no growth can be measured, and the
  planner's weights reader wants a number); null only when the partition never had a size.

Performance: the history is shuffled once, hash-partitioned by (topic, partition); the hourly
aggregation and the per-partition aggregations reuse that distribution, so no other exchange of
raw rows happens. Quantiles come from sorted primitive arrays (no Python UDF, no boxed hash map).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.errors import AnalysisException
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
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from topology.errors import InputError

HOURS_PER_DAY = 24
SECONDS_PER_DAY = 86_400
_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = SECONDS_PER_DAY * 1_000_000

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
"""The history dataset as `rebalance history export` writes it (one row per partition per step)."""

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
    ]
)
"""One row per partition: the rates the planner uses, the hourly profile, size and growth."""

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_ACCEPTED_TYPES: dict[str, tuple[type[DataType], ...]] = {
    "ts": (TimestampType, TimestampNTZType),
    "topic": (StringType,),
    "partition": (ByteType, ShortType, IntegerType),
    "bytes_in_per_sec": (DoubleType, FloatType, *_INTEGRAL),
    "bytes_out_per_sec": (DoubleType, FloatType, *_INTEGRAL),
    "size_bytes": _INTEGRAL,
}
_KEYS = ("topic", "partition")


class HistoryInputError(InputError):
    """The history dataset does not have the columns, types or rows the weights job needs."""


@dataclass(frozen=True, slots=True)
class WeightsParams:
    """Parameters of the weights transform."""

    quantile: float = 0.95

    def __post_init__(self) -> None:
        if not 0.0 <= self.quantile <= 1.0:
            raise InputError(f"--quantile must be between 0 and 1, got {self.quantile}")


def validate_history(history: DataFrame) -> None:
    """Raise HistoryInputError naming the first missing or mistyped column."""
    fields = {f.name: f.dataType for f in history.schema.fields}
    for name, accepted in _ACCEPTED_TYPES.items():
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

    Raises HistoryInputError on missing or mistyped columns; emptiness is checked by `main`,
    because checking it here would run a job.
    """
    validate_history(history)
    micros = _epoch_micros(history)
    rows = history.select(
        F.col("topic"),
        F.col("partition").cast(IntegerType()).alias("partition"),
        micros.alias("ts_micros"),
        F.floor((micros % _MICROS_PER_DAY) / _MICROS_PER_HOUR).cast(IntegerType()).alias("hour"),
        F.col("bytes_in_per_sec").cast(DoubleType()).alias("bytes_in"),
        F.col("bytes_out_per_sec").cast(DoubleType()).alias("bytes_out"),
        F.col("size_bytes").cast(LongType()).alias("size"),
    ).repartition(*_KEYS)
    weights = _per_partition(_per_hour(rows, params.quantile), params.quantile)
    return weights.select(
        *[F.col(f.name).cast(f.dataType).alias(f.name) for f in WEIGHTS_SCHEMA.fields]
    )


def _epoch_micros(history: DataFrame) -> Column:
    """Microseconds since the epoch of `ts`, independent of the session time zone."""
    if isinstance(history.schema["ts"].dataType, TimestampNTZType):
        return F.expr("timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', ts)")
    return F.unix_micros(F.col("ts"))


def _quantile_of_sorted(values: Column, quantile: float) -> Column:
    """Linear-interpolation quantile of an ascending array without nulls; null when empty."""
    count = F.size(values)
    position = F.lit(quantile) * (count - 1)
    lower = F.floor(position).cast(IntegerType())
    upper = F.least(lower + 1, count - 1)
    low_value = F.get(values, lower)
    high_value = F.get(values, upper)
    return F.when(count > 0, low_value + (position - lower) * (high_value - low_value))


def _per_hour(rows: DataFrame, quantile: float) -> DataFrame:
    """Stage 1, per (partition, hour of day): sorted rates, their quantiles, size partials."""
    with_size = F.col("size").isNotNull()
    days = F.when(with_size, F.col("ts_micros") / _MICROS_PER_DAY)
    size = F.col("size").cast(DoubleType())
    hourly = rows.groupBy(*_KEYS, "hour").agg(
        F.sort_array(F.collect_list("bytes_in")).alias("sorted_in"),
        F.sort_array(F.collect_list("bytes_out")).alias("sorted_out"),
        F.max(F.when(with_size, F.struct("ts_micros", "size"))).alias("latest"),
        F.struct(
            F.count(days).cast(DoubleType()).alias("n"),
            F.avg(days).alias("mean_x"),
            F.avg(F.when(with_size, size)).alias("mean_y"),
            (F.var_pop(days) * F.count(days)).alias("sxx"),
            (F.covar_pop(days, size) * F.count(days)).alias("sxy"),
        ).alias("moments"),
    )
    return hourly.select(
        "*",
        _quantile_of_sorted(F.col("sorted_in"), quantile).alias("hour_in"),
        _quantile_of_sorted(F.col("sorted_out"), quantile).alias("hour_out"),
    )


def _per_partition(hourly: DataFrame, quantile: float) -> DataFrame:
    """Stage 2, per partition, over its (at most 24) hourly rows: no raw rows are re-read."""
    per_partition = hourly.groupBy(*_KEYS).agg(
        F.sort_array(F.flatten(F.collect_list("sorted_in"))).alias("all_in"),
        F.sort_array(F.flatten(F.collect_list("sorted_out"))).alias("all_out"),
        F.map_from_entries(F.collect_list(F.struct("hour", "hour_in"))).alias("by_hour_in"),
        F.map_from_entries(F.collect_list(F.struct("hour", "hour_out"))).alias("by_hour_out"),
        # max of (rate, -hour): the highest rate, and on ties the earliest hour.
        F.max(
            F.when(F.col("hour_in").isNotNull(), F.struct("hour_in", (-F.col("hour")).alias("h")))
        ).alias("peak"),
        F.max("latest").alias("latest"),
        F.filter(F.collect_list("moments"), lambda m: m["n"] > 0).alias("moments"),
    )
    hours = F.sequence(F.lit(0), F.lit(HOURS_PER_DAY - 1))
    return per_partition.select(
        *_KEYS,
        _quantile_of_sorted(F.col("all_in"), quantile).alias("bytes_in_per_sec"),
        _quantile_of_sorted(F.col("all_out"), quantile).alias("bytes_out_per_sec"),
        F.transform(hours, lambda h: F.col("by_hour_in")[h]).alias("hourly_bytes_in_per_sec"),
        F.transform(hours, lambda h: F.col("by_hour_out")[h]).alias("hourly_bytes_out_per_sec"),
        (-F.col("peak.h")).alias("peak_hour"),
        F.col("latest.size").alias("size_bytes"),
        _slope_per_day(F.col("moments")).alias("size_growth_bytes_per_day"),
    )


def _slope_per_day(moments: Column) -> Column:
    """Least-squares slope from per-hour moments, merged exactly (Chan et al.'s pairwise update).

    Each element holds n, the means of x (days) and y (bytes) and the centred sums Sxx, Sxy of
    one group; merged: S = sum(S_i) + sum(n_i * (mean_i - mean) ...). 0 when Sxx is 0 (one
    distinct timestamp), null without any point.
    """
    zero = F.lit(0.0)
    n = F.aggregate(moments, zero, lambda acc, m: acc + m["n"])
    mean_x = F.aggregate(moments, zero, lambda acc, m: acc + m["n"] * m["mean_x"]) / n
    mean_y = F.aggregate(moments, zero, lambda acc, m: acc + m["n"] * m["mean_y"]) / n
    sxx = F.aggregate(
        moments, zero, lambda acc, m: acc + m["sxx"] + m["n"] * (m["mean_x"] - mean_x) ** 2
    )
    sxy = F.aggregate(
        moments,
        zero,
        lambda acc, m: acc + m["sxy"] + m["n"] * (m["mean_x"] - mean_x) * (m["mean_y"] - mean_y),
    )
    return F.when(n < 1, F.lit(None)).when(sxx > 0, sxy / sxx).otherwise(F.lit(0.0))


def read_history(spark: SparkSession, path: str) -> DataFrame:
    """Read the history Parquet dataset; a missing or unreadable path is an InputError."""
    try:
        return spark.read.parquet(path)
    except AnalysisException as exc:
        reason = exc.getMessage()
        raise HistoryInputError(f"cannot read history dataset {path!r}: {reason}") from exc


def write_weights(weights: DataFrame, path: str) -> None:
    """One file, rows sorted by (topic, partition): Parquet, or JSON lines for a `.json` name.

    The rows are few (one per Kafka partition), so they are gathered into one task after the
    aggregation; Spark writes a directory, which is replaced by the single file it holds.
    """
    ordered = weights.repartition(1).sortWithinPartitions(*_KEYS)
    is_json = path.endswith(".json")
    target = Path(path)
    staging = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    writer = ordered.write.mode("overwrite")
    if is_json:
        writer.json(str(staging), ignoreNullFields=False)
    else:
        writer.parquet(str(staging))
    parts = sorted(staging.glob("part-*"))
    if len(parts) != 1:
        raise HistoryInputError(f"the weights job wrote {len(parts)} files, expected one")
    if target.is_dir():
        shutil.rmtree(target)
    parts[0].replace(target)
    shutil.rmtree(staging, ignore_errors=True)


def run(spark: SparkSession, history_path: str, out_path: str, params: WeightsParams) -> int:
    """Read, transform and write; returns the number of partitions written."""
    history = read_history(spark, history_path)
    weights = transform(history, params).cache()
    try:
        count = weights.count()
        if count == 0:
            raise HistoryInputError(f"history dataset {history_path!r} has no rows")
        write_weights(weights, out_path)
    finally:
        weights.unpersist()
    return count


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Flags of `python -m spark_jobs.weights` (also what spark-submit passes)."""
    parser = argparse.ArgumentParser(description="Per-partition weights from traffic history.")
    parser.add_argument("--history", required=True, help="history Parquet dataset directory")
    parser.add_argument("--out", required=True, help="weights file (.json: JSON lines)")
    parser.add_argument("--quantile", type=float, default=0.95, help="rate quantile (0..1)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default local[*], or spark-submit's --master)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for spark-submit and `python -m`: exit code 0, or the error's exit code."""
    from spark_jobs.session import build_session

    args = parse_args(argv)
    try:
        params = WeightsParams(quantile=args.quantile)
        started_here = SparkSession.getActiveSession() is None
        spark = build_session(args.master)
        try:
            count = run(spark, args.history, args.out, params)
        finally:
            if started_here:
                spark.stop()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote weights for {count} partitions to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
