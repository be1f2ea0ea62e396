"""Traffic history export: Prometheus range queries -> the weights job's Parquet history dataset.

Range queries come through a RangeSource (topology.prom_source.PrometheusMetrics, the one
Prometheus client); everything here is pure: chunking a long window so no series exceeds
Prometheus' points-per-series limit, and turning per-topic rates plus per-partition sizes into
one row per partition per step.

The sandbox's exporter (and many real ones) reports bytes in/out per topic, not per partition.
The export then splits each topic's rate over its partitions in proportion to their log size at
that step (equal shares when no size is known), and records so in `_notes.json` beside the data
(the leading underscore keeps Spark and Arrow from reading it as data) and in each file's
Parquet key-value metadata.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_rebalance.core.errors import InputError, MetricsError
from topology import promql
from topology.prom_source import Series
from topology.units import duration_text

MAX_POINTS_PER_SERIES = 11_000
"""Prometheus refuses range queries that would return more points than this per series."""

MAX_EXPORT_STEPS = 1_000_000
"""Samples per series one export may ask for: 91 chunks (364 range queries), e.g. 7 days at
1 s or about 2 years at 60 s; more is hours of queries and rows nobody needs for weights."""

LARGE_EXPORT_QUERIES = 30
"""From this many range queries on, the export says how many before it starts."""

MIN_GROWTH_SPAN_SECONDS = 86_400.0
"""Least span of sizes the weights job extrapolates growth from (by default): a slope over
minutes, projected over a plan's horizon of days, turns a burst into gigabytes a day."""

QUERIES_PER_CHUNK = 4
"""Range queries per chunk: topic bytes in, topic bytes out, partition sizes, topic requests."""

_NICE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600,
               43_200, 86_400)

HISTORY_ARROW_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("bytes_in_per_sec", pa.float64()),
        pa.field("bytes_out_per_sec", pa.float64()),
        pa.field("size_bytes", pa.int64()),
        # produce and fetch requests a second (optional: histories written before lack it)
        pa.field("requests_per_sec", pa.float64()),
    ]
)
"""The history dataset schema (the weights job's input), as Arrow types."""

SPLIT_NOTE = (
    "bytes_in_per_sec, bytes_out_per_sec and requests_per_sec are per-topic rates split over "
    "the topic's "
    "partitions in proportion to each partition's log size at that step (equal shares when no "
    "size is known): the exporter reports traffic per topic, not per partition"
)

NOTES_FILE = "_notes.json"

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800,
                 "y": 31_536_000}


class RangeSource(Protocol):
    """Range PromQL queries (the one thing the export needs from Prometheus)."""

    def query_range(self, query: str, start: float, end: float, step: float) -> Series:
        """Evaluate `query` at start, start + step, ... <= end (unix seconds)."""
        ...


@dataclass(frozen=True, slots=True)
class HistoryQueries:
    """The PromQL queries of an export; defaults come from topology/promql.py. Without
    `topic_requests` (empty) the history's requests_per_sec stays null."""

    topic_bytes_in: str
    topic_bytes_out: str
    partition_size: str
    topic_requests: str = ""

    @classmethod
    def defaults(cls, rate_window: str) -> HistoryQueries:
        return cls(
            topic_bytes_in=promql.render(promql.TOPIC_BYTES_IN_RATE, window=rate_window),
            topic_bytes_out=promql.render(promql.TOPIC_BYTES_OUT_RATE, window=rate_window),
            partition_size=promql.render(promql.LOG_SIZE_BYTES),
            topic_requests=promql.render(promql.TOPIC_REQUESTS_RATE, window=rate_window),
        )


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What an export wrote."""

    rows: int
    partitions: int
    chunks: int
    files: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


MAX_DURATION_S = 100 * 365.25 * 86400
"""No history, step, window or wait is longer than a century: a longer one is a unit slip."""


def parse_duration(text: str, what: str) -> float:
    """A Prometheus-style duration ('7d', '60s', '1h30m') or plain seconds -> seconds (> 0)."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise InputError(
                f"{what}: cannot read {text!r} as a duration (e.g. 7d, 60s, 1h30m)"
            ) from None
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    if not seconds > 0 or math.isinf(seconds):
        raise InputError(f"{what}: the duration must be positive, got {text!r:.40}")
    if seconds > MAX_DURATION_S:
        raise InputError(f"{what}: {text!r:.40} is longer than 100 years; check its unit")
    return seconds


def parse_min_growth_span(text: str) -> float:
    """--min-growth-span: a duration, or 0 to measure growth from any span."""
    if text.strip() in ("0", "0s"):
        return 0.0
    return parse_duration(text, "--min-growth-span")




@dataclass(frozen=True, slots=True)
class ExportEstimate:
    """The size of an export before it runs: samples per series, chunks and range queries."""

    steps: int
    chunks: int

    @property
    def queries(self) -> int:
        return self.chunks * QUERIES_PER_CHUNK


def estimate_export(window_s: float, step_s: float) -> ExportEstimate:
    """Samples per series (the grid start, start + step, ..., end) and the chunks
    `chunk_ranges` splits them into (at most MAX_POINTS_PER_SERIES each)."""
    steps = math.floor(window_s / step_s) + 1
    return ExportEstimate(steps, math.ceil(steps / MAX_POINTS_PER_SERIES))


def fitting_step(window_s: float, max_steps: int = MAX_EXPORT_STEPS) -> int:
    """The smallest round step (1s, 5s, 1m, 5m, ...) at which the window holds at most
    max_steps samples per series."""
    needed = window_s / (max_steps - 1)
    for step in _NICE_STEPS:
        if step >= needed:
            return step
    return math.ceil(needed / 86_400) * 86_400


def check_export_size(window_s: float, step_s: float, since: str, step: str) -> ExportEstimate:
    """The estimate of an export, or an InputError (exit 2) above MAX_EXPORT_STEPS that names
    the --step that fits."""
    estimate = estimate_export(window_s, step_s)
    if estimate.steps > MAX_EXPORT_STEPS:
        raise InputError(
            f"--since {since} at --step {step} is {estimate.steps:,} samples per series "
            f"({estimate.queries:,} range queries); at most {MAX_EXPORT_STEPS:,} are exported: "
            f"use --step {duration_text(fitting_step(window_s), compact=True)} or more, or a "
            "shorter --since")
    return estimate


def coverage_note(start: float, end: float, first: float, last: float,
                  min_growth_span_s: float = MIN_GROWTH_SPAN_SECONDS) -> str | None:
    """A note when the data covers much less (under half) of the window asked for."""
    asked, covered = end - start, max(0.0, last - first)
    if covered >= asked / 2:
        return None
    message = (f"Prometheus returned {duration_text(covered, compact=True)} of the "
               f"{duration_text(asked, compact=True)} "
               f"asked for ({_iso(first)} to {_iso(last)}): older samples are gone (its "
               "retention) or the series are newer; weights from this history describe only "
               "that time")
    if covered < min_growth_span_s:
        message += (f", and the weights job measures no size growth from less than "
                    f"{duration_text(min_growth_span_s, compact=True)}")
    return message


def chunk_ranges(
    start: float, end: float, step: float, max_points: int = MAX_POINTS_PER_SERIES
) -> list[tuple[float, float]]:
    """Split [start, end] into consecutive ranges of at most `max_points` steps each.

    Chunks do not overlap: each starts one step after the previous one ends, so every
    evaluation time start + k * step is queried exactly once.
    """
    if step <= 0 or end < start or max_points < 1:
        raise InputError(f"bad export window: start {start}, end {end}, step {step}")
    span = (max_points - 1) * step
    ranges: list[tuple[float, float]] = []
    chunk_start = start
    while chunk_start <= end:
        chunk_end = min(end, chunk_start + span)
        ranges.append((chunk_start, chunk_end))
        chunk_start = chunk_end + step
    return ranges


def _frame(series: Series, labels: Sequence[str], value: str) -> pd.DataFrame:
    """Flatten range-query series into columns ts (unix s), the labels, and `value`."""
    records: list[tuple[Any, ...]] = []
    for metric, samples in series:
        if any(name not in metric for name in labels):
            continue
        key = tuple(metric[name] for name in labels)
        records.extend((ts, *key, v) for ts, v in samples if math.isfinite(v))
    frame = pd.DataFrame.from_records(records, columns=["ts", *labels, value])
    return frame.astype({"ts": "float64", value: "float64"})


def split_topic_rates(rates_in: Series, rates_out: Series, sizes: Series,
                      requests: Series | None = None) -> pd.DataFrame:
    """One row per (step, partition): the topic rates split in proportion to partition size.

    A partition is known from its size series. At a step where none of a topic's partitions has
    a size, the topic's rate is shared equally; a partition without a size while others have
    one (added mid-window, or deleted) gets no row there. Rows keep a null rate where the topic
    had none.
    """
    size = _frame(sizes, ["topic", "partition"], "size_bytes")
    size["partition"] = pd.to_numeric(size["partition"], errors="coerce")
    size = size.dropna(subset=["partition"]).astype({"partition": "int32"})
    rates = _frame(rates_in, ["topic"], "bytes_in_per_sec").merge(
        _frame(rates_out, ["topic"], "bytes_out_per_sec"), on=["ts", "topic"], how="outer"
    ).merge(_frame(requests or [], ["topic"], "requests_per_sec"), on=["ts", "topic"],
            how="outer")
    known = size[["topic", "partition"]].drop_duplicates()
    spread = rates.merge(known, on="topic", how="inner")
    rows = spread.merge(size, on=["ts", "topic", "partition"], how="outer")
    # A partition without a size at a step where others of its topic have one did not exist
    # yet (added mid-window) or is gone: no row, rather than a rate of 0 that reads as idle.
    has_size = rows["size_bytes"].notna()
    others = has_size.groupby([rows["ts"], rows["topic"]]).transform("any")
    rows = rows[has_size | ~others].reset_index(drop=True)
    weight = rows["size_bytes"].fillna(0.0).clip(lower=0.0)
    group = [rows["ts"], rows["topic"]]
    total = weight.groupby(group).transform("sum")
    count = weight.groupby(group).transform("size")
    share = (weight / total).where(total > 0, 1.0 / count)
    rows["bytes_in_per_sec"] = rows["bytes_in_per_sec"] * share
    rows["bytes_out_per_sec"] = rows["bytes_out_per_sec"] * share
    rows["requests_per_sec"] = rows["requests_per_sec"] * share
    rows["ts"] = pd.to_datetime(rows["ts"], unit="s", utc=True).astype("datetime64[us, UTC]")
    rows["size_bytes"] = rows["size_bytes"].round().astype("Int64")
    ordered = rows.sort_values(["ts", "topic", "partition"], kind="stable")
    return ordered[[f.name for f in HISTORY_ARROW_SCHEMA]].reset_index(drop=True)


def topics_without_partitions(rates_in: Series, sizes: Series) -> list[str]:
    """Topics with a rate but no partition size series: their traffic cannot be placed."""
    with_rate = {m.get("topic") for m, _ in rates_in} - {None}
    with_size = {m.get("topic") for m, _ in sizes} - {None}
    return sorted(str(t) for t in with_rate - with_size)


def export_history(
    source: RangeSource,
    start: float,
    end: float,
    step: float,
    out_dir: Path,
    queries: HistoryQueries,
    on_chunk: Callable[[int, int], None] | None = None,
) -> ExportSummary:
    """Query [start, end] chunk by chunk and write one Parquet file per chunk plus _notes.json."""
    _prepare_out_dir(out_dir)
    ranges = chunk_ranges(start, end, step)
    files: list[str] = []
    rows = 0
    partitions: set[tuple[str, int]] = set()
    unplaced: set[str] = set()
    first, last = math.inf, -math.inf
    for index, (chunk_start, chunk_end) in enumerate(ranges):
        rates_in = source.query_range(queries.topic_bytes_in, chunk_start, chunk_end, step)
        rates_out = source.query_range(queries.topic_bytes_out, chunk_start, chunk_end, step)
        sizes = source.query_range(queries.partition_size, chunk_start, chunk_end, step)
        requests = (source.query_range(queries.topic_requests, chunk_start, chunk_end, step)
                    if queries.topic_requests else [])
        unplaced.update(topics_without_partitions(rates_in, sizes))
        frame = split_topic_rates(rates_in, rates_out, sizes, requests)
        if len(frame):
            name = f"part-{index:05d}.parquet"
            table = pa.Table.from_pandas(frame, schema=HISTORY_ARROW_SCHEMA, preserve_index=False)
            table = table.replace_schema_metadata({"rebalance.history.note": SPLIT_NOTE})
            pq.write_table(table, out_dir / name)
            files.append(name)
            rows += len(frame)
            first = min(first, frame["ts"].min().timestamp())
            last = max(last, frame["ts"].max().timestamp())
            partitions.update(zip(frame["topic"], frame["partition"].astype(int), strict=True))
        if on_chunk:
            on_chunk(index + 1, len(ranges))
    if rows == 0:
        raise MetricsError(
            f"Prometheus returned no partition sizes or topic rates between "
            f"{_iso(start)} and {_iso(end)}; check the queries: {queries.partition_size!r}"
        )
    notes = [SPLIT_NOTE]
    short = coverage_note(start, end, first, last)
    if short:
        notes.append(short)
    if unplaced:
        notes.append(f"topics with traffic but no partition sizes (left out): "
                     f"{', '.join(sorted(unplaced))}")
    _write_notes(out_dir, start, end, step, queries, notes, rows)
    return ExportSummary(rows, len(partitions), len(ranges), tuple(files), tuple(notes))


def _prepare_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InputError(f"--out {out_dir} exists and is not an empty directory; choose another")
    out_dir.mkdir(parents=True, exist_ok=True)


def _write_notes(out_dir: Path, start: float, end: float, step: float,
                 queries: HistoryQueries, notes: list[str], rows: int) -> None:
    document = {
        "version": 1, "start": _iso(start), "end": _iso(end), "step_seconds": step, "rows": rows,
        "rates_split_by_size": True, "notes": notes,
        "queries": {"topic_bytes_in": queries.topic_bytes_in,
                    "topic_bytes_out": queries.topic_bytes_out,
                    "partition_size": queries.partition_size,
                    **({"topic_requests": queries.topic_requests}
                       if queries.topic_requests else {})},
    }
    (out_dir / NOTES_FILE).write_text(json.dumps(document, indent=2) + "\n")


def _iso(unix_seconds: float) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).isoformat()
