"""Benchmark of the weights job: Spark local mode vs vectorized pandas vs Polars, same data.

    .venv/bin/python benchmarks/weights_bench.py --rows 1M,10M [--rows ...,100M] [--master local[*]]

Synthetic history (1,000 partitions per 10M rows, 10,000 one-minute steps, diurnal traffic,
1% null sizes) is generated once per size under --data (Parquet, 1M-row files). Reported per
size: Spark cold and best warm job time (session start reported apart), rows/s, pandas and
Polars compute times (file read reported apart), the Spark/pandas ratio and the growth ratio
time(size)/time(previous size). The three results are cross-checked on the window quantiles.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.session import build_session
from spark_jobs.weights import WeightsParams, transform

STEPS = 10_000
STEP_US = 60_000_000
T0_US = 1_767_571_200_000_000  # 2026-01-05T00:00:00Z
DAY_US = 86_400_000_000
HOUR_US = 3_600_000_000


def parse_rows(text: str) -> int:
    units = {"k": 1_000, "m": 1_000_000}
    text = text.strip().lower()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def generate(out: Path, rows: int, seed: int = 7) -> None:
    """Write `rows` history rows: rows / STEPS partitions x STEPS minutes, 1M rows per file."""
    if (out / "_SUCCESS").exists():
        return
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n_parts = max(1, rows // STEPS)
    base = rng.lognormal(10, 1.5, n_parts)
    growth = rng.normal(1e6, 5e5, n_parts)
    size0 = rng.integers(10**8, 10**10, n_parts)
    topics = np.array([f"topic-{i // 50:04d}" for i in range(n_parts)], dtype=object)
    partitions = (np.arange(n_parts) % 50).astype(np.int32)
    steps_per_file = max(1, 1_000_000 // n_parts)
    for index, first in enumerate(range(0, STEPS, steps_per_file)):
        steps = np.arange(first, min(STEPS, first + steps_per_file))
        ts = np.repeat(T0_US + steps * STEP_US, n_parts)
        part = np.tile(np.arange(n_parts), len(steps))
        hour = (ts // HOUR_US) % 24
        bytes_in = base[part] * (1 + 0.5 * np.sin(hour / 24 * 2 * np.pi))
        bytes_in = bytes_in * rng.lognormal(0, 0.3, len(ts))
        size = size0[part] + growth[part] * (ts - T0_US) / DAY_US + rng.normal(0, 1e5, len(ts))
        table = pa.table({
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "topic": pa.array(topics[part], pa.string()),
            "partition": pa.array(partitions[part], pa.int32()),
            "bytes_in_per_sec": bytes_in,
            "bytes_out_per_sec": bytes_in * rng.uniform(1, 3, len(ts)),
            "size_bytes": pa.array(size.astype(np.int64), pa.int64(),
                                   mask=rng.random(len(ts)) < 0.01),
        })
        pq.write_table(table, out / f"part-{index:05d}.parquet")
    (out / "_SUCCESS").touch()


def weights_pandas(df: pd.DataFrame, q: float) -> pd.DataFrame:
    """The same computation, vectorized pandas (integer group keys, cython quantiles)."""
    topic_codes = df["topic"].cat.codes.to_numpy(np.int64)
    key = topic_codes * 1_000_000 + df["partition"].to_numpy(np.int64)
    utc_wall = df["ts"].dt.tz_convert("UTC").dt.tz_localize(None)
    micros = utc_wall.to_numpy().astype("datetime64[us]").astype(np.int64)
    hour = (micros % DAY_US) // HOUR_US
    rates = df[["bytes_in_per_sec", "bytes_out_per_sec"]]
    overall = rates.groupby(key).quantile(q)
    hourly = rates.groupby(key * 24 + hour).quantile(q)
    hourly_key = hourly.index.to_numpy()
    hourly.index = pd.MultiIndex.from_arrays([hourly_key // 24, hourly_key % 24])
    wide_in = hourly["bytes_in_per_sec"].unstack().reindex(columns=range(24))
    wide_out = hourly["bytes_out_per_sec"].unstack().reindex(columns=range(24))
    peak = wide_in.idxmax(axis=1)  # first maximum: the earliest hour on ties
    has_size = df["size_bytes"].notna().to_numpy()
    x = micros[has_size] / DAY_US
    y = df["size_bytes"].to_numpy()[has_size].astype(np.float64)
    k = key[has_size]
    sums = pd.DataFrame({"k": k, "x": x, "y": y})
    means = sums.groupby("k")[["x", "y"]].transform("mean")
    dx, dy = sums["x"] - means["x"], sums["y"] - means["y"]
    moments = pd.DataFrame({"k": k, "sxy": dx * dy, "sxx": dx * dx}).groupby("k").sum()
    order = np.lexsort((micros[has_size], k))
    latest = pd.Series(y[order], index=k[order]).groupby(level=0).last()
    return overall.assign(
        hourly_bytes_in_per_sec=pd.Series(list(wide_in.to_numpy()), index=wide_in.index),
        hourly_bytes_out_per_sec=pd.Series(list(wide_out.to_numpy()), index=wide_out.index),
        peak_hour=peak, size_bytes=latest,
        size_growth_bytes_per_day=moments["sxy"] / moments["sxx"],
    )


def weights_polars(df: pl.DataFrame, q: float) -> pl.DataFrame:
    """The same computation in Polars (exact linear-interpolation quantiles)."""
    keys = ["topic", "partition"]
    df = df.with_columns(
        ((pl.col("ts").dt.epoch("us") % DAY_US) // HOUR_US).alias("hour"),
        (pl.col("ts").dt.epoch("us") / DAY_US).alias("x"),
    )
    rate = [pl.col(c).quantile(q, "linear") for c in ("bytes_in_per_sec", "bytes_out_per_sec")]
    hourly = df.group_by([*keys, "hour"]).agg(rate).sort([*keys, "hour"])
    profile = hourly.group_by(keys).agg(
        pl.col("bytes_in_per_sec").alias("hourly_in"),
        pl.col("bytes_out_per_sec").alias("hourly_out"),
        pl.col("hour").sort_by(["bytes_in_per_sec", "hour"], descending=[True, False])
        .first().alias("peak_hour"),
    )
    sized = df.filter(pl.col("size_bytes").is_not_null())
    sizes = sized.group_by(keys).agg(
        pl.col("size_bytes").sort_by("ts").last().alias("size_bytes"),
        (pl.cov("x", "size_bytes", ddof=0) / pl.col("x").var(ddof=0)).alias("growth"),
    )
    overall = df.group_by(keys).agg(rate)
    return overall.join(profile, on=keys).join(sizes, on=keys, how="left")


def timed(label: str, func, *args):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = func(*args)
    elapsed = time.perf_counter() - started
    print(f"  {label}: {elapsed:.2f}s", flush=True)
    return elapsed, result


def bench_size(spark, path: Path, rows: int, warm_runs: int, q: float) -> dict[str, float]:  # type: ignore[no-untyped-def]
    params = WeightsParams(q)

    def spark_job() -> list:  # type: ignore[type-arg]
        return transform(spark.read.parquet(str(path)), params).collect()

    cold, spark_rows = timed("spark cold", spark_job)
    warm = min(timed(f"spark warm {i + 1}", spark_job)[0] for i in range(warm_runs))
    read_pd, pdf = timed("pandas read", lambda: pq.read_table(path).to_pandas(
        strings_to_categorical=True))
    pandas_s, pandas_result = timed("pandas compute", weights_pandas, pdf, q)
    del pdf
    read_pl, pldf = timed("polars read", pl.read_parquet, str(path / "*.parquet"))
    polars_s, _ = timed("polars compute", weights_polars, pldf, q)
    del pldf
    spark_in = np.array(sorted(r.bytes_in_per_sec for r in spark_rows))
    pandas_in = np.sort(pandas_result["bytes_in_per_sec"].to_numpy())
    agree = float(np.max(np.abs(spark_in - pandas_in) / np.abs(pandas_in)))
    print(f"  spark vs pandas window quantile, max relative difference: {agree:.2e}")
    return {"rows": rows, "spark_cold": cold, "spark_warm": warm, "pandas": pandas_s,
            "pandas_read": read_pd, "polars": polars_s, "polars_read": read_pl}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", default="1M,10M", help="comma-separated sizes, e.g. 1M,10M,100M")
    parser.add_argument("--data", default="/tmp/rebalance-weights-bench", help="data cache dir")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--warm-runs", type=int, default=2)
    parser.add_argument("--quantile", type=float, default=0.95)
    parser.add_argument("--skip-baselines-above", default="10M",
                        help="no pandas/Polars above this size (they need the data in memory)")
    args = parser.parse_args()
    sizes = [parse_rows(s) for s in args.rows.split(",")]
    for rows in sizes:
        timed(f"generate {rows:,} rows", generate, Path(args.data) / f"rows-{rows}", rows)
    session_s, spark = timed("spark session start", build_session, args.master,
                             "weights-bench", None, args.driver_memory)
    results = []
    for rows in sizes:
        print(f"{rows:,} rows", flush=True)
        path = Path(args.data) / f"rows-{rows}"
        if rows > parse_rows(args.skip_baselines_above):
            cold, _ = timed("spark", lambda p=path: transform(
                spark.read.parquet(str(p)), WeightsParams(args.quantile)).collect())
            results.append({"rows": rows, "spark_cold": cold, "spark_warm": cold})
            continue
        results.append(bench_size(spark, path, rows, args.warm_runs, args.quantile))
    spark.stop()
    print(f"\nsession start: {session_s:.1f}s, master {args.master}")
    print("| rows | Spark cold s | Spark warm s | Spark rows/s | pandas s | Polars s "
          "| Spark/pandas | growth (Spark warm) |")
    print("|---|---|---|---|---|---|---|---|")
    previous: dict[str, float] | None = None
    for r in results:
        growth = f"{r['spark_warm'] / previous['spark_warm']:.1f}" if previous else "-"
        pandas_s = r.get("pandas")
        print(f"| {int(r['rows']):,} | {r['spark_cold']:.1f} | {r['spark_warm']:.1f} "
              f"| {r['rows'] / r['spark_warm']:,.0f} "
              f"| {pandas_s:.1f} | {r['polars']:.1f} | {r['spark_warm'] / pandas_s:.2f} "
              if pandas_s else f"| {int(r['rows']):,} | {r['spark_cold']:.1f} | - "
              f"| {r['rows'] / r['spark_cold']:,.0f} | - | - | - ", end="")
        print(f"| {growth} |")
        previous = r


if __name__ == "__main__":
    main()
