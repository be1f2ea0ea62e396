"""Weights files (Parquet, JSON lines): reading, rejection, applying with a horizon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.weights import read_weights
from planner.weights import PartitionWeight, apply_weights
from topology.model import Broker, Capacity, Partition, TopicPartition, Topology

ROWS: list[dict[str, Any]] = [
    {"topic": "t", "partition": 0, "bytes_in_per_sec": 5.0, "bytes_out_per_sec": 7.5,
     "size_bytes": 1000, "size_growth_bytes_per_day": 100.0},
    {"topic": "t", "partition": 1, "bytes_in_per_sec": 1.0, "bytes_out_per_sec": 0.0,
     "size_bytes": 500, "size_growth_bytes_per_day": -200.0},
    {"topic": "gone", "partition": 0, "bytes_in_per_sec": 1.0, "bytes_out_per_sec": 1.0,
     "size_bytes": 1, "size_growth_bytes_per_day": 0.0},
]


def topology() -> Topology:
    brokers = (Broker(1, None, Capacity(10**6, 10**6, 10**6)),)
    return Topology(brokers, (Partition("t", 0, (1,), 10), Partition("t", 1, (1,), 10),
                              Partition("t", 2, (1,), 10, 3.0, 4.0)))


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_reads_parquet_and_json_lines(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"w.{suffix}"
    if suffix == "parquet":
        pd.DataFrame(ROWS).to_parquet(path)
    else:
        path.write_text("\n".join(json.dumps(r) for r in ROWS))
    weights = read_weights(path)
    assert weights[TopicPartition("t", 0)] == PartitionWeight(5.0, 7.5, 1000.0, 100.0)
    assert len(weights) == 3


def test_apply_projects_sizes_and_replaces_rates(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS))
    weighted, notes = apply_weights(topology(), read_weights(path), horizon_days=3)
    p0, p1, p2 = weighted.partitions
    # the snapshot's 10 bytes (measured now; the weights' 1000 are the history's last sample)
    # and 3 days of the weights' growth
    assert (p0.size_bytes, p0.bytes_in_per_sec, p0.bytes_out_per_sec) == (310, 5.0, 7.5)
    assert p1.size_bytes == 0  # shrinking below zero is clamped
    assert (p2.size_bytes, p2.bytes_in_per_sec) == (10, 3.0)  # no weight: snapshot values
    assert any("1 partition(s) have no weight" in n for n in notes)
    assert any("1 weight row(s)" in n for n in notes)


def test_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({k: v for k, v in ROWS[0].items() if k != "size_bytes"}))
    with pytest.raises(InputError, match=r"missing column.*size_bytes"):
        read_weights(path)


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_a_file_without_rows_is_said_to_be_empty(tmp_path: Path, text: str) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(text)
    with pytest.raises(InputError, match="the file holds no rows"):
        read_weights(path)


def test_negative_rate_and_duplicates_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({**ROWS[0], "bytes_in_per_sec": -1}))
    with pytest.raises(InputError, match="t-0 has a non-numeric, negative or too large "
                                         "bytes_in_per_sec"):
        read_weights(path)
    path.write_text("\n".join(json.dumps(ROWS[0]) for _ in range(2)))
    with pytest.raises(InputError, match="appears more than once"):
        read_weights(path)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_weights(tmp_path / "none.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(InputError, match="cannot read weights"):
        read_weights(bad)
    with pytest.raises(InputError, match="--horizon must not be negative"):
        apply_weights(topology(), {}, -1)


def test_null_fields_keep_the_snapshot_values(tmp_path: Path) -> None:
    path = tmp_path / "w.parquet"
    pd.DataFrame([{**ROWS[0], "bytes_out_per_sec": None, "size_bytes": None,
                   "size_growth_bytes_per_day": None},
                  {**ROWS[1], "size_bytes": None}]).to_parquet(path)
    weighted, _ = apply_weights(topology(), read_weights(path), horizon_days=1)
    p0, p1, _ = weighted.partitions
    assert (p0.size_bytes, p0.bytes_in_per_sec, p0.bytes_out_per_sec) == (10, 5.0, 0.0)
    assert p1.size_bytes == 0  # snapshot 10 bytes, shrinking 200 a day


def test_non_numeric_value_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({**ROWS[0], "size_bytes": "big"}))
    with pytest.raises(InputError, match="non-numeric, negative or too large size_bytes"):
        read_weights(path)


def test_reads_a_spark_style_parquet_directory(tmp_path: Path) -> None:
    out = tmp_path / "weights.parquet"
    out.mkdir()
    pd.DataFrame(ROWS[:2]).to_parquet(out / "part-00000-abc.snappy.parquet")
    pd.DataFrame(ROWS[2:]).to_parquet(out / "part-00001-abc.snappy.parquet")
    (out / "_SUCCESS").write_text("")
    weights = read_weights(out)
    assert sorted(str(k) for k in weights) == ["gone-0", "t-0", "t-1"]


def test_parquet_is_recognized_by_content(tmp_path: Path) -> None:
    path = tmp_path / "weights.out"
    pd.DataFrame(ROWS).to_parquet(path)
    assert len(read_weights(path)) == 3


@pytest.mark.parametrize(("change", "message"), [
    ({"size_bytes": True}, "non-numeric, negative or too large size_bytes (True)"),
    ({"bytes_in_per_sec": False}, "non-numeric, negative or too large bytes_in_per_sec (False)"),
    ({"partition": True}, "has partition 'True'"),
    ({"topic": 7}, 'topic 7 is not a JSON string; write topic names in quotes ("7")'),
    ({"topic": "a b"}, "topic 'a b' is not a Kafka topic name"),
])
def test_json_lines_are_held_to_the_snapshots_types(tmp_path: Path, change: dict[str, Any],
                                                    message: str) -> None:
    """JSON's true and false are not numbers, and a topic is a string that Kafka accepts as a
    name: the snapshot reader refuses both, and so do the weights."""
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(json.dumps({**row, **change}) if i == 0 else json.dumps(row)
                              for i, row in enumerate(ROWS)))
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_weights(path)


def test_a_size_far_from_the_snapshots_is_told_and_the_snapshots_counts() -> None:
    """Weights from a history that ended before a topic was recreated: 17 GB in the weights,
    1 GB now. The plan counts 1 GB and says why the weights look old."""
    t = Topology((Broker(1, None, Capacity(10**12, 10**9, 10**9)),),
                 (Partition("t", 0, (1,), 10**9), Partition("t", 1, (1,), 10**9)))
    weights = {TopicPartition("t", 0): PartitionWeight(1.0, 1.0, 17e9, None),
               TopicPartition("t", 1): PartitionWeight(1.0, 1.0, 1.5e9, None)}
    weighted, notes = apply_weights(t, weights)
    assert [p.size_bytes for p in weighted.partitions] == [10**9, 10**9]
    assert notes == ("1 partition(s) had a size in the weights under half or over twice the "
                     "snapshot's (e.g. t-0: 17.0 GB in the weights, 1.00 GB now): the plan counts "
                     "the snapshot's; weights from an old history carry old rates too (compute "
                     "them again)",)


def test_weights_of_another_cluster_are_refused() -> None:
    other = {TopicPartition("elsewhere", 0): PartitionWeight(1.0, 1.0, 1.0, None)}
    with pytest.raises(InputError, match=r"none of the 1 weight row\(s\) names a partition "
                                         r"of this cluster"):
        apply_weights(topology(), other)


def test_a_history_a_snapshot_or_a_plan_given_as_weights_is_named(tmp_path: Path) -> None:
    history = tmp_path / "history"
    history.mkdir()
    (history / "_notes.json").write_text("{}")
    with pytest.raises(InputError, match=r"is a traffic history .* compute them with "
                                         r"`rebalance weights --history"):
        read_weights(history)
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(json.dumps({"version": 1, "brokers": [], "partitions": []}, indent=2))
    with pytest.raises(InputError, match="looks like a snapshot file, not weights"):
        read_weights(snapshot)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [], "moves": []}))
    with pytest.raises(InputError, match="looks like a plan file, not weights"):
        read_weights(plan)
