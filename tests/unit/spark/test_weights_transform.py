"""The weights transform on small DataFrames with exact expected values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_jobs.weights import HISTORY_SCHEMA, WEIGHTS_SCHEMA, WeightsParams, transform

T0 = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday, 00:00 UTC


def _row(
    ts: datetime, bytes_in: float | None, bytes_out: float | None = 0.0,
    size: int | None = None, topic: str = "t", partition: int = 0,
) -> tuple[object, ...]:
    return (ts, topic, partition, bytes_in, bytes_out, size)


def _hours(values: dict[int, float]) -> list[float | None]:
    return [values.get(h) for h in range(24)]


def test_window_quantile_interpolates_linearly(spark: SparkSession) -> None:
    # 101 samples 0..100 in hour 0: the 0.95 quantile is exactly 95 (position 95).
    # Two samples 0 and 10 in hour 1 of another partition: position 0.95 -> 9.5.
    rows = [_row(T0 + timedelta(seconds=i), float(i), 2.0 * i) for i in range(101)]
    rows += [_row(T0 + timedelta(hours=1), 0.0, 0.0, partition=1),
             _row(T0 + timedelta(hours=1, minutes=1), 10.0, 20.0, partition=1)]
    result = transform(spark.createDataFrame(rows, HISTORY_SCHEMA), WeightsParams(0.95))
    expected = [
        Row(topic="t", partition=0, bytes_in_per_sec=95.0, bytes_out_per_sec=190.0,
            hourly_bytes_in_per_sec=_hours({0: 95.0}),
            hourly_bytes_out_per_sec=_hours({0: 190.0}),
            peak_hour=0, size_bytes=None, size_growth_bytes_per_day=None, requests_per_sec=None),
        Row(topic="t", partition=1, bytes_in_per_sec=9.5, bytes_out_per_sec=19.0,
            hourly_bytes_in_per_sec=_hours({1: 9.5}), hourly_bytes_out_per_sec=_hours({1: 19.0}),
            peak_hour=1, size_bytes=None, size_growth_bytes_per_day=None, requests_per_sec=None),
    ]
    assertDataFrameEqual(result, spark.createDataFrame(expected, WEIGHTS_SCHEMA))
    assert result.schema == WEIGHTS_SCHEMA


def test_hourly_profile_spans_days_and_leaves_empty_hours_null(spark: SparkSession) -> None:
    # Hour 3 appears on two days (50, then 10): its median is 30, below hour 20's 50.
    samples = {0: [1.0, 3.0], 3: [50.0], 20: [50.0, 50.0], 23: [7.0]}
    rows = [_row(T0 + timedelta(hours=h, minutes=i), v, v / 2)
            for h, values in samples.items() for i, v in enumerate(values)]
    rows.append(_row(T0 + timedelta(days=1, hours=3), 10.0, 5.0))
    result = transform(spark.createDataFrame(rows, HISTORY_SCHEMA), WeightsParams(0.5))
    # hour 0: median of [1, 3] = 2; hour 3: median of [10, 50] = 30; window median of
    # [1, 3, 7, 10, 50, 50, 50] = 10.
    expected_in = _hours({0: 2.0, 3: 30.0, 20: 50.0, 23: 7.0})
    got = result.collect()
    assert len(got) == 1
    assert got[0].hourly_bytes_in_per_sec == expected_in
    assert got[0].hourly_bytes_out_per_sec == [None if v is None else v / 2 for v in expected_in]
    assert got[0].bytes_in_per_sec == 10.0
    assert got[0].peak_hour == 20


def test_peak_hour_tie_goes_to_the_earliest_hour(spark: SparkSession) -> None:
    rows = [_row(T0 + timedelta(hours=h), 40.0) for h in (22, 5, 9)]
    rows.append(_row(T0 + timedelta(hours=1), 39.0))
    result = transform(spark.createDataFrame(rows, HISTORY_SCHEMA), WeightsParams(0.95))
    assert result.collect()[0].peak_hour == 5


def test_latest_size_and_growth_slope(spark: SparkSession) -> None:
    # Sizes on a line of 1000 bytes per day plus a null at the end: slope 1000, latest 3000.
    rows = [_row(T0 + timedelta(days=d), 1.0, size=1000 * d) for d in range(4)]
    rows.append(_row(T0 + timedelta(days=5), 1.0, size=None))
    # Another partition: one size point only -> slope 0; values off the line: exact LSQ.
    rows.append(_row(T0, 1.0, size=500, partition=1))
    rows += [_row(T0 + timedelta(hours=12 * k), 1.0, size=s, partition=2)
             for k, s in enumerate([0, 100, 50, 250])]
    result = {r.partition: r for r in
              transform(spark.createDataFrame(rows, HISTORY_SCHEMA), WeightsParams()).collect()}
    assert result[0].size_bytes == 3000
    assert result[0].size_growth_bytes_per_day == pytest.approx(1000.0, rel=1e-9)
    assert result[1].size_bytes == 500
    assert result[1].size_growth_bytes_per_day == 0.0
    # x in days = 0, .5, 1, 1.5; y = 0, 100, 50, 250: slope = Sxy / Sxx = 175 / 1.25 = 140/day.
    assert result[2].size_bytes == 250
    assert result[2].size_growth_bytes_per_day == pytest.approx(140.0, rel=1e-9)


def test_null_rates_are_missing_samples(spark: SparkSession) -> None:
    rows = [_row(T0, None, None), _row(T0 + timedelta(minutes=1), 4.0, None)]
    got = transform(spark.createDataFrame(rows, HISTORY_SCHEMA), WeightsParams()).collect()[0]
    assert got.bytes_in_per_sec == 4.0
    assert got.bytes_out_per_sec is None
    assert got.hourly_bytes_out_per_sec == [None] * 24


def test_quantile_zero_and_one_are_min_and_max(spark: SparkSession) -> None:
    rows = [_row(T0 + timedelta(minutes=i), v) for i, v in enumerate([5.0, 1.0, 9.0, 2.0])]
    df = spark.createDataFrame(rows, HISTORY_SCHEMA)
    assert transform(df, WeightsParams(0.0)).collect()[0].bytes_in_per_sec == 1.0
    assert transform(df, WeightsParams(1.0)).collect()[0].bytes_in_per_sec == 9.0
