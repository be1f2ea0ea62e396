"""The weights transform on histories as real ones are: repeats, jitter, gaps, glitches, skew.

Expected values are computed by hand from the definitions in spark_jobs/weights.py.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StructField, StructType
from pyspark.testing import assertDataFrameEqual

from spark_jobs.weights import HISTORY_SCHEMA, WEIGHTS_SCHEMA, WeightsParams, transform

T0 = datetime(2026, 1, 5, tzinfo=UTC)  # 00:00 UTC
GRID = WeightsParams(0.5, step_seconds=60, grid_start_seconds=T0.timestamp())


def _row(
    at: timedelta, bytes_in: float | None, bytes_out: float | None = 0.0,
    size: int | None = None, topic: str = "t", partition: int | None = 0,
) -> tuple[object, ...]:
    return (T0 + at, topic, partition, bytes_in, bytes_out, size)


def _minute(m: float) -> timedelta:
    return timedelta(minutes=m)


def _hours(values: dict[int, float]) -> list[float | None]:
    return [values.get(h) for h in range(24)]


def _weights(spark: SparkSession, rows: list[tuple[object, ...]], params: WeightsParams,
             schema: StructType = HISTORY_SCHEMA) -> DataFrame:
    return transform(spark.createDataFrame(rows, schema), params)


def test_repeats_jitter_and_order_do_not_change_the_samples(spark: SparkSession) -> None:
    # Five steps with in = 10, 20, 30, 40, 50 and sizes 100..500. Minute 2 was also exported at
    # 1:58 with in 35 (snaps to 2:00: one sample, the larger value), minute 4 twice exactly,
    # minute 3 late by 7 s; rows are reversed. Unique samples: 10, 20, 35, 40, 50 -> median 35
    # (counting every row would give 40). Sizes: 100 per minute -> 144000 per day, latest 500.
    steps = [(0, 10.0, 100), (1, 20.0, 200), (2, 30.0, 300), (3 + 7 / 60, 40.0, 400),
             (4, 50.0, 500), (4, 50.0, 500), (2 - 2 / 60, 35.0, 300)]
    rows = [_row(_minute(m), v, v * 2, size) for m, v, size in reversed(steps)]
    expected = Row(topic="t", partition=0, bytes_in_per_sec=35.0, bytes_out_per_sec=70.0,
                   hourly_bytes_in_per_sec=_hours({0: 35.0}),
                   hourly_bytes_out_per_sec=_hours({0: 70.0}), peak_hour=0, size_bytes=500,
                   size_growth_bytes_per_day=144_000.0, requests_per_sec=None)
    assertDataFrameEqual(_weights(spark, rows, GRID),
                         spark.createDataFrame([expected], WEIGHTS_SCHEMA), rtol=1e-9)


def test_without_a_step_only_equal_timestamps_are_one_sample(spark: SparkSession) -> None:
    rows = [_row(_minute(2), 30.0), _row(_minute(2 - 2 / 60), 35.0), _row(_minute(2), 30.0),
            _row(_minute(3), 10.0)]
    got = _weights(spark, rows, WeightsParams(1.0)).collect()[0]
    # samples 30 (twice at 2:00: one), 35 and 10: the max is 35, the min 10.
    assert got.bytes_in_per_sec == 35.0
    assert _weights(spark, rows, WeightsParams(0.0)).collect()[0].bytes_in_per_sec == 10.0
    assert _weights(spark, rows, WeightsParams(0.5)).collect()[0].bytes_in_per_sec == 30.0


def test_snapping_uses_the_grid_of_the_notes_start(spark: SparkSession) -> None:
    # Grid at :30 of every minute: 0:29 and 0:31 are one step (0:30), 1:01 is the next (1:30).
    grid = WeightsParams(1.0, step_seconds=60, grid_start_seconds=T0.timestamp() + 30)
    rows = [_row(timedelta(seconds=29), 5.0), _row(timedelta(seconds=31), 7.0),
            _row(timedelta(seconds=61), 1.0)]
    got = _weights(spark, rows, WeightsParams(0.0, 60, T0.timestamp() + 30)).collect()[0]
    assert got.bytes_in_per_sec == 1.0  # the minimum of the two samples {7, 1}
    assert _weights(spark, rows, grid).collect()[0].bytes_in_per_sec == 7.0


def test_counter_glitches_are_missing_samples(spark: SparkSession) -> None:
    # Negative, NaN, infinite and absurd (over 1e24, what plan --weights reads) rates are not
    # measurements; neither is a negative size.
    values = [1.0, 2.0, math.nan, math.inf, -math.inf, -5.0, 3.0, None, 1e30]
    rows = [_row(_minute(i), v, v, size) for i, (v, size) in
            enumerate(zip(values, [10, 15, -1, 25, None, -7, 40, None, None], strict=True))]
    got = _weights(spark, rows, WeightsParams(1.0, 60, T0.timestamp())).collect()[0]
    assert (got.bytes_in_per_sec, got.bytes_out_per_sec) == (3.0, 3.0)
    assert got.hourly_bytes_in_per_sec == _hours({0: 3.0})
    assert got.size_bytes == 40
    # valid sizes 10, 15, 25, 40 at minutes 0, 1, 3, 6: on a line of 5 bytes per minute.
    assert math.isclose(got.size_growth_bytes_per_day, 5.0 * 1440, rel_tol=1e-9)
    low = _weights(spark, rows, WeightsParams(0.0, 60, T0.timestamp())).collect()[0]
    assert low.bytes_in_per_sec == 1.0


def test_one_absurd_spike_does_not_move_the_quantile(spark: SparkSession) -> None:
    # 100 samples of 10 and one of 10000 (1000x): position 0.95 * 100 = 95 -> 10, exactly.
    rows = [_row(_minute(i), 10.0) for i in range(100)] + [_row(_minute(100), 10_000.0)]
    got = _weights(spark, rows, WeightsParams(0.95, 60, T0.timestamp())).collect()[0]
    assert got.bytes_in_per_sec == 10.0
    assert got.hourly_bytes_in_per_sec[0] == 10.0
    # With fewer than 1 / (1 - q) + 1 samples the spike is interpolated in (documented).
    few = _weights(spark, rows[:9] + rows[-1:], WeightsParams(0.95)).collect()[0]
    assert math.isclose(few.bytes_in_per_sec, 10.0 + 0.55 * (10_000.0 - 10.0), rel_tol=1e-12)


def test_gaps_and_partitions_created_or_deleted_mid_history(spark: SparkSession) -> None:
    # p0: every hour of the day. p1: created at 20:00 (rows from then on). p2: deleted after
    # 03:00. Missing steps are unknown, not zero: each is weighed over its own rows.
    rows = [_row(timedelta(hours=h), float(h), 1.0, 100 * h, partition=0) for h in range(24)]
    rows += [_row(timedelta(hours=h), 50.0, 5.0, 10, partition=1) for h in range(20, 24)]
    rows += [_row(timedelta(hours=h), 8.0 - h, 2.0, 7, partition=2) for h in range(4)]
    expected = [
        Row(topic="t", partition=0, bytes_in_per_sec=11.5, bytes_out_per_sec=1.0,
            hourly_bytes_in_per_sec=[float(h) for h in range(24)],
            hourly_bytes_out_per_sec=[1.0] * 24, peak_hour=23, size_bytes=2300,
            size_growth_bytes_per_day=2400.0, requests_per_sec=None),
        Row(topic="t", partition=1, bytes_in_per_sec=50.0, bytes_out_per_sec=5.0,
            hourly_bytes_in_per_sec=_hours({h: 50.0 for h in range(20, 24)}),
            hourly_bytes_out_per_sec=_hours({h: 5.0 for h in range(20, 24)}), peak_hour=20,
            size_bytes=10, size_growth_bytes_per_day=0.0, requests_per_sec=None),
        Row(topic="t", partition=2, bytes_in_per_sec=6.5, bytes_out_per_sec=2.0,
            hourly_bytes_in_per_sec=_hours({h: 8.0 - h for h in range(4)}),
            hourly_bytes_out_per_sec=_hours({h: 2.0 for h in range(4)}), peak_hour=0,
            size_bytes=7, size_growth_bytes_per_day=0.0, requests_per_sec=None),
    ]
    assertDataFrameEqual(_weights(spark, rows, GRID),
                         spark.createDataFrame(expected, WEIGHTS_SCHEMA), rtol=1e-9)


def test_zero_traffic_has_no_peak_and_unmeasured_stays_null(spark: SparkSession) -> None:
    rows = [_row(_minute(i), 0.0, 0.0, 0, topic="idle") for i in range(3)]
    rows += [_row(_minute(i), None, None, None, topic="silent") for i in range(3)]
    expected = [
        Row(topic="idle", partition=0, bytes_in_per_sec=0.0, bytes_out_per_sec=0.0,
            hourly_bytes_in_per_sec=_hours({0: 0.0}), hourly_bytes_out_per_sec=_hours({0: 0.0}),
            peak_hour=None, size_bytes=0, size_growth_bytes_per_day=0.0, requests_per_sec=None),
        Row(topic="silent", partition=0, bytes_in_per_sec=None, bytes_out_per_sec=None,
            hourly_bytes_in_per_sec=[None] * 24, hourly_bytes_out_per_sec=[None] * 24,
            peak_hour=None, size_bytes=None, size_growth_bytes_per_day=None, requests_per_sec=None),
    ]
    assertDataFrameEqual(_weights(spark, rows, GRID),
                         spark.createDataFrame(expected, WEIGHTS_SCHEMA))


def test_rows_that_cannot_be_placed_are_skipped(spark: SparkSession) -> None:
    rows = [_row(_minute(0), 4.0), _row(_minute(1), 99.0, topic=None),  # type: ignore[arg-type]
            _row(_minute(2), 99.0, partition=None), _row(_minute(3), 99.0, partition=-1),
            (None, "t", 0, 99.0, 0.0, None)]
    nullable = StructType([StructField(f.name, f.dataType, True) for f in HISTORY_SCHEMA])
    got = _weights(spark, rows, GRID, nullable).collect()
    assert [(r.topic, r.partition, r.bytes_in_per_sec) for r in got] == [("t", 0, 4.0)]


def test_floating_sizes_are_rounded_and_nan_sizes_missing(spark: SparkSession) -> None:
    # pandas writes an integer column with nulls as float64: 1e3 rounds to 1000, NaN is missing.
    schema = StructType([*HISTORY_SCHEMA.fields[:5], StructField("size_bytes", DoubleType())])
    rows = [_row(_minute(0), 1.0, size=999.6), _row(_minute(1), 1.0, size=math.nan)]  # type: ignore[arg-type]
    got = _weights(spark, rows, GRID, schema).collect()[0]
    assert (got.size_bytes, got.size_growth_bytes_per_day) == (1000, 0.0)


def test_one_big_topic_spreads_over_all_tasks_with_one_shuffle(spark: SparkSession) -> None:
    # A topic with 64 partitions (one of them hot) must not land in one task: the only
    # exchange hash-partitions by (topic, partition).
    rows = [_row(_minute(i), 1e9 if p == 0 else 1.0, partition=p) for p in range(64)
            for i in range(3)]
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    try:
        result = _weights(spark, rows, GRID)
        tasks = result.select(F.spark_partition_id().alias("task")).distinct().count()
        plan = result._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert tasks == 4
    assert plan.count("Exchange") == 1
    assert "hashpartitioning(topic" in plan and "partition" in plan.split("hashpartitioning(")[1]
