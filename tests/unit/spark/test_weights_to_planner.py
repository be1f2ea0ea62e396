"""The weights job's output as the planner reads it, on a cluster that changed since the history.

The history has a topic deleted since ("gone"), numeric-looking topic names ("007"), and a
partition without traffic; the snapshot has a partition the history never saw ("new"-0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from kafka_rebalance.files.weights import read_weights
from planner.weights import PartitionWeight, apply_weights
from spark_jobs.weights import WeightsParams, run
from topology.model import Broker, Capacity, Partition, TopicPartition, Topology

T0_US = 1_767_571_200_000_000
MINUTE_US = 60_000_000


def _history() -> pa.Table:
    rows = [("007", 0, 5.0, 7.0, 100), ("007", 0, 5.0, 7.0, 100), ("1e3", 1, 2.0, 3.0, 50),
            ("gone", 0, 9.0, 9.0, 900), ("idle", 0, 0.0, 0.0, 0)]
    return pa.table({
        "ts": pa.array([T0_US + i * MINUTE_US for i in range(len(rows))],
                       pa.timestamp("us", tz="UTC")),
        "topic": [r[0] for r in rows], "partition": pa.array([r[1] for r in rows], pa.int32()),
        "bytes_in_per_sec": [r[2] for r in rows], "bytes_out_per_sec": [r[3] for r in rows],
        "size_bytes": pa.array([r[4] for r in rows], pa.int64()),
    })


def _snapshot() -> Topology:
    brokers = (Broker(1, None, Capacity(10**9, 10**9, 10**9)),)
    return Topology(brokers, (
        Partition("007", 0, (1,), 1, 1.0, 1.0), Partition("1e3", 1, (1,), 1, 1.0, 1.0),
        Partition("idle", 0, (1,), 1, 1.0, 1.0), Partition("new", 0, (1,), 77, 4.0, 6.0)))


@pytest.mark.parametrize("name", ["weights.json", "weights.parquet"])
def test_planner_applies_the_job_output_to_a_changed_cluster(
    spark: SparkSession, history_dir: Any, tmp_path: Path, name: str
) -> None:
    out = tmp_path / name
    assert run(spark, str(history_dir([_history()])), str(out), WeightsParams(0.95)) == 4
    weights = read_weights(out)
    assert weights[TopicPartition("007", 0)] == PartitionWeight(5.0, 7.0, 100.0, 0.0)
    assert weights[TopicPartition("1e3", 1)] == PartitionWeight(2.0, 3.0, 50.0, 0.0)
    weighted, notes = apply_weights(_snapshot(), weights, horizon_days=2)
    by_key = {p.key: p for p in weighted.partitions}
    assert (by_key[TopicPartition("007", 0)].bytes_in_per_sec,
            by_key[TopicPartition("007", 0)].size_bytes) == (5.0, 1)  # the snapshot's size
    assert by_key[TopicPartition("idle", 0)].bytes_in_per_sec == 0.0  # measured idle, not unknown
    new = by_key[TopicPartition("new", 0)]  # no weight: the snapshot's values
    assert (new.size_bytes, new.bytes_in_per_sec, new.bytes_out_per_sec) == (77, 4.0, 6.0)
    assert notes == ("1 partition(s) have no weight; their snapshot values are used",
                     "1 weight row(s) name partitions the cluster does not have")


def test_json_topic_names_that_look_like_numbers_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text("\n".join(json.dumps(
        {"topic": t, "partition": 0, "bytes_in_per_sec": 1.0, "bytes_out_per_sec": 1.0,
         "size_bytes": 1, "size_growth_bytes_per_day": 0.0}) for t in ("007", "1e3", "12")))
    assert sorted(k.topic for k in read_weights(path)) == ["007", "12", "1e3"]


def test_request_rates_in_the_history_become_the_partitions_requests(
    spark: SparkSession, history_dir: Any, tmp_path: Path
) -> None:
    """One file with requests_per_sec (as `history export` writes now), one without (written
    before): the weights carry the quantile of the requests measured, null where none was,
    and the planner takes them in place of the snapshot's."""
    with_requests = _history().append_column(
        "requests_per_sec", pa.array([40.0, 60.0, 3.0, 1.0, None], pa.float64()))
    older = pa.table({  # a later minute of "007" from a history without the column
        "ts": pa.array([T0_US + 9 * MINUTE_US], pa.timestamp("us", tz="UTC")),
        "topic": ["007"], "partition": pa.array([0], pa.int32()),
        "bytes_in_per_sec": [5.0], "bytes_out_per_sec": [7.0],
        "size_bytes": pa.array([100], pa.int64())})
    out = tmp_path / "weights.parquet"
    assert run(spark, str(history_dir([with_requests, older])), str(out),
               WeightsParams(1.0)) == 4
    weights = read_weights(out)
    assert weights[TopicPartition("007", 0)].requests_per_sec == 60.0  # the max of 40 and 60
    assert weights[TopicPartition("1e3", 1)].requests_per_sec == 3.0
    assert weights[TopicPartition("idle", 0)].requests_per_sec is None  # never measured
    weighted, _ = apply_weights(_snapshot(), weights)
    by_key = {p.key: p for p in weighted.partitions}
    assert by_key[TopicPartition("007", 0)].requests_per_sec == 60.0
    assert by_key[TopicPartition("idle", 0)].requests_per_sec == 0.0  # the snapshot's


def test_weights_written_before_requests_are_read_as_unmeasured(tmp_path: Path) -> None:
    out = tmp_path / "old.json"
    out.write_text(json.dumps({"topic": "t", "partition": 0, "bytes_in_per_sec": 1.0,
                               "bytes_out_per_sec": 2.0, "size_bytes": 3,
                               "size_growth_bytes_per_day": 0.0}) + "\n")
    assert read_weights(out)[TopicPartition("t", 0)] == PartitionWeight(1.0, 2.0, 3.0, 0.0)


def test_samples_stamped_after_now_are_left_out_with_a_note(
    spark: SparkSession, history_dir: Any, tmp_path: Path
) -> None:
    """A recording host's clock 400 days ahead stamped two samples of a small size: they
    would be the latest size and make the growth negative. They are left out, and said."""
    from spark_jobs.weights import compute

    day_us = 86_400_000_000
    ts = [T0_US + i * day_us for i in range(3)] + [T0_US + 400 * day_us, T0_US + 401 * day_us]
    table = pa.table({
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "topic": ["t"] * 5, "partition": pa.array([0] * 5, pa.int32()),
        "bytes_in_per_sec": [1.0] * 5, "bytes_out_per_sec": [1.0] * 5,
        "size_bytes": pa.array([1000, 2000, 3000, 10, 10], pa.int64()),
    })
    out = tmp_path / "w.json"
    now = T0_US / 1e6 + 3 * 86_400
    result = compute(spark, str(history_dir([table], notes=None)), str(out),
                     WeightsParams(0.95, now_seconds=now), step_seconds=86_400)
    weight = read_weights(out)[TopicPartition("t", 0)]
    assert (weight.size_bytes, weight.size_growth_bytes_per_day) == (3000.0, 1000.0)
    assert any(n.startswith("2 sample(s) are stamped more than 5m after now")
               for n in result.notes), result.notes


def test_data_sampled_finer_than_its_notes_say_is_told(
    spark: SparkSession, history_dir: Any, tmp_path: Path
) -> None:
    """Samples every 5 minutes for 3 hours under notes saying one an hour: 12 samples fold
    into each hour's maximum, so the job says the step does not match the data."""
    from spark_jobs.weights import compute

    five_min_us = 300_000_000
    n = 37
    table = pa.table({
        "ts": pa.array([T0_US + i * five_min_us for i in range(n)], pa.timestamp("us", tz="UTC")),
        "topic": ["t"] * n, "partition": pa.array([0] * n, pa.int32()),
        "bytes_in_per_sec": [float(i % 7) for i in range(n)],
        "bytes_out_per_sec": [1.0] * n, "size_bytes": pa.array([100] * n, pa.int64()),
    })
    notes = {"version": 1, "start": "2026-01-05T00:00:00+00:00",
             "end": "2026-01-05T03:00:00+00:00", "step_seconds": 3600.0}
    result = compute(spark, str(history_dir([table], notes=notes)), str(tmp_path / "w.json"),
                     WeightsParams(0.95))
    assert any(n.startswith("the history has about ") and "sample times over 3h" in n
               and "but its _notes.json says one every 1h" in n  # (the count is approximate)
               for n in result.notes), result.notes
    plain = compute(spark, str(history_dir([table], notes={**notes, "step_seconds": 300.0},
                                           name="matching")),
                    str(tmp_path / "w2.json"), WeightsParams(0.95))
    assert not any("sample times" in n for n in plain.notes), plain.notes


def test_rows_of_no_kafka_partition_are_counted_when_left_out(
    spark: SparkSession, history_dir: Any, tmp_path: Path
) -> None:
    from spark_jobs.weights import compute

    table = pa.table({
        "ts": pa.array([T0_US, T0_US + MINUTE_US, T0_US + 2 * MINUTE_US],
                       pa.timestamp("us", tz="UTC")),
        "topic": ["t", "t", "t"], "partition": pa.array([0, -1, 2**40], pa.int64()),
        "bytes_in_per_sec": [1.0, 1.0, 1.0], "bytes_out_per_sec": [1.0, 1.0, 1.0],
        "size_bytes": pa.array([10, 10, 10], pa.int64()),
    })
    result = compute(spark, str(history_dir([table], notes=None)), str(tmp_path / "w.json"),
                     WeightsParams(0.95), step_seconds=60)
    assert result.partitions == 1
    assert ("2 row(s) of the history have a partition number Kafka cannot have (negative, or "
            "over 2147483647): left out") in result.notes, result.notes
