"""The weights job's two aggregation stages over de-duplicated samples (see spark_jobs/weights.py
for the definitions): per (partition, hour of day), then per partition from the hourly rows.

Inputs are rows of (topic, partition, ts_micros, hour, bytes_in, bytes_out, size, requests); every
function here builds columns or plans and runs nothing.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, IntegerType

HOURS_PER_DAY = 24
SECONDS_PER_DAY = 86_400
MICROS_PER_HOUR = 3_600_000_000
MICROS_PER_DAY = SECONDS_PER_DAY * 1_000_000
KEYS = ("topic", "partition")


def quantile_of_sorted(values: Column, quantile: float) -> Column:
    """Linear-interpolation quantile of an ascending array without nulls; null when empty."""
    count = F.size(values)
    position = F.lit(quantile) * (count - 1)
    lower = F.floor(position).cast(IntegerType())
    upper = F.least(lower + 1, count - 1)
    low_value = F.get(values, lower)
    high_value = F.get(values, upper)
    return F.when(count > 0, low_value + (position - lower) * (high_value - low_value))


def per_hour(rows: DataFrame, quantile: float) -> DataFrame:
    """Stage 1, per (partition, hour of day): sorted rates, their quantiles, size partials."""
    with_size = F.col("size").isNotNull()
    days = F.when(with_size, F.col("ts_micros") / MICROS_PER_DAY)
    size = F.col("size").cast(DoubleType())
    hourly = rows.groupBy(*KEYS, "hour").agg(
        F.sort_array(F.collect_list("bytes_in")).alias("sorted_in"),
        F.sort_array(F.collect_list("bytes_out")).alias("sorted_out"),
        F.sort_array(F.collect_list("requests")).alias("sorted_requests"),
        F.max(F.when(with_size, F.struct("ts_micros", "size"))).alias("latest"),
        F.min(F.when(with_size, F.col("ts_micros"))).alias("first_sized"),
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
        quantile_of_sorted(F.col("sorted_in"), quantile).alias("hour_in"),
        quantile_of_sorted(F.col("sorted_out"), quantile).alias("hour_out"),
    )


def per_partition(hourly: DataFrame, quantile: float,
                  min_growth_span_seconds: float = 0.0) -> DataFrame:
    """Stage 2, per partition, over its (at most 24) hourly rows: no raw rows are re-read.

    Growth is null when the partition's sizes span less than min_growth_span_seconds: a slope
    over minutes, projected over days, turns a burst into a growth of gigabytes a day.
    """
    per_partition = hourly.groupBy(*KEYS).agg(
        F.sort_array(F.flatten(F.collect_list("sorted_in"))).alias("all_in"),
        F.sort_array(F.flatten(F.collect_list("sorted_out"))).alias("all_out"),
        F.sort_array(F.flatten(F.collect_list("sorted_requests"))).alias("all_requests"),
        F.map_from_entries(F.collect_list(F.struct("hour", "hour_in"))).alias("by_hour_in"),
        F.map_from_entries(F.collect_list(F.struct("hour", "hour_out"))).alias("by_hour_out"),
        # max of (rate, -hour): the highest rate, and on ties the earliest hour.
        F.max(
            F.when(F.col("hour_in").isNotNull(), F.struct("hour_in", (-F.col("hour")).alias("h")))
        ).alias("peak"),
        F.max("latest").alias("latest"),
        F.min("first_sized").alias("first_sized"),
        F.filter(F.collect_list("moments"), lambda m: m["n"] > 0).alias("moments"),
    )
    hours = F.sequence(F.lit(0), F.lit(HOURS_PER_DAY - 1))
    growth = _slope_per_day(F.col("moments"))
    if min_growth_span_seconds > 0:
        sized_span = F.col("latest.ts_micros") - F.col("first_sized")
        growth = F.when(sized_span >= F.lit(round(min_growth_span_seconds * 1e6)), growth)
    return per_partition.select(
        *KEYS,
        quantile_of_sorted(F.col("all_in"), quantile).alias("bytes_in_per_sec"),
        quantile_of_sorted(F.col("all_out"), quantile).alias("bytes_out_per_sec"),
        F.transform(hours, lambda h: F.col("by_hour_in")[h]).alias("hourly_bytes_in_per_sec"),
        F.transform(hours, lambda h: F.col("by_hour_out")[h]).alias("hourly_bytes_out_per_sec"),
        F.when(F.col("peak.hour_in") > 0, -F.col("peak.h")).alias("peak_hour"),
        F.col("latest.size").alias("size_bytes"),
        growth.alias("size_growth_bytes_per_day"),
        quantile_of_sorted(F.col("all_requests"), quantile).alias("requests_per_sec"),
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
