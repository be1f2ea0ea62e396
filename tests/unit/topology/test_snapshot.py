"""Snapshot v1 round trip and every validation error, read through the real file reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.core.errors import InputError
from topology.capacities import parse_capacities
from topology.model import Resource
from topology.snapshot import read_snapshot, topology_to_dict, write_snapshot

CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 100, "net_out_bytes_per_sec": 100}


def doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": 1,
        "brokers": [
            {"id": 1, "rack": "a", "capacity": dict(CAP)},
            {"id": 2, "rack": "b", "capacity": dict(CAP)},
            {"id": 3, "rack": "b", "capacity": dict(CAP)},
        ],
        "exported_by": "another tool",  # unknown top-level keys are ignored (DESIGN.md)
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [1, 2], "size_bytes": 10,
             "bytes_in_per_sec": 1.5, "bytes_out_per_sec": 3.0},
            {"topic": "orders", "partition": 1, "replicas": [2, 1], "size_bytes": 0,
             "bytes_in_per_sec": 0.0, "bytes_out_per_sec": 0.0},
        ],
    }
    base.update(overrides)
    return base


def write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "snap.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    topology = read_snapshot(write(tmp_path, doc()))
    out = tmp_path / "out.json"
    write_snapshot(out, topology)
    again = read_snapshot(out)
    assert again == topology
    assert topology_to_dict(again)["partitions"][0]["bytes_in_per_sec"] == 1.5
    assert again.broker(3).capacity.disk_bytes == 1000


def test_empty_new_broker_is_kept(tmp_path: Path) -> None:
    topology = read_snapshot(write(tmp_path, doc()))
    assert 3 in topology.broker_ids
    assert all(3 not in p.replicas for p in topology.partitions)


def _broken(mutate: Any) -> dict[str, Any]:
    d = doc()
    mutate(d)
    return d


CASES: list[tuple[Any, str]] = [
    ("{not json", "not valid JSON"),
    ([1, 2], "expected a JSON object"),
    (doc(version=2), "unsupported snapshot version 2"),
    (_broken(lambda d: d["partitions"][0].__setitem__("replicas", [1, 9])), "unknown broker 9"),
    (_broken(lambda d: d["partitions"].append(dict(d["partitions"][0]))),
     "orders-0 is listed more than once"),
    (_broken(lambda d: d["partitions"][0].__setitem__("replicas", [1, 1])), "repeats a broker"),
    (_broken(lambda d: d["partitions"][1].__setitem__("size_bytes", -5)),
     "orders-1: 'size_bytes' is negative"),
    (_broken(lambda d: d["brokers"][1].pop("capacity")), r"1 broker\(s\) have no capacity \(2\)"),
    (_broken(lambda d: d["brokers"][0]["capacity"].pop("net_in_bytes_per_sec")),
     "broker 1: capacity lacks net_in_bytes_per_sec"),
    (_broken(lambda d: d["brokers"][0].__setitem__("id", "x")), "brokers\\[0\\]: 'id' must be"),
    (_broken(lambda d: d["brokers"].append(dict(d["brokers"][0]))),
     "broker 1 is listed more than once"),
    (_broken(lambda d: d["partitions"][0].__setitem__("replicas", "1,2")),
     "'replicas' must be a list"),
    (_broken(lambda d: d["partitions"][0].pop("topic")), "partitions\\[0\\]: missing 'topic'"),
    (_broken(lambda d: d["partitions"][0].__setitem__("bytes_in_per_sec", "fast")),
     "'bytes_in_per_sec' must be a number"),
]


@pytest.mark.parametrize(("content", "message"), CASES)
def test_bad_snapshots_name_the_offending_entry(
    tmp_path: Path, content: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        read_snapshot(write(tmp_path, content))


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read snapshot"):
        read_snapshot(tmp_path / "nope.json")


def test_capacities_fill_a_snapshot_without_capacity(tmp_path: Path) -> None:
    d = doc()
    for b in d["brokers"]:
        b.pop("capacity")
    caps = parse_capacities({
        "default": {"disk_bytes": "1TB", "net_in_bytes_per_sec": "100MB/s",
                    "net_out_bytes_per_sec": "100MB/s"},
        "racks": {"b": {"disk_bytes": "2TB"}},
        "brokers": {3: {"net_in_bytes_per_sec": "1GiB/s"}},
    })
    topology = read_snapshot(write(tmp_path, d), caps)
    assert topology.broker(1).capacity.disk_bytes == 1e12
    assert topology.broker(2).capacity.disk_bytes == 2e12
    assert topology.broker(3).capacity.disk_bytes == 2e12
    assert topology.broker(3).capacity.of(Resource.NET_IN) == 2**30
    assert topology.broker(2).capacity.of(Resource.NET_OUT) == 1e8


def test_brokers_without_capacity_are_named_in_one_problem_with_one_hint(tmp_path: Path) -> None:
    """A live snapshot has no capacities: one line names the brokers and the fix once."""
    live = {"version": 1, "brokers": [{"id": i, "rack": "a"} for i in range(1, 14)],
            "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]}
    with pytest.raises(InputError) as caught:
        read_snapshot(write(tmp_path, live))
    message = str(caught.value).split(": ", 1)[1]  # after the file's path
    assert message.startswith("13 broker(s) have no capacity (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...)")
    assert message.count("--capacities") == 1 and len(message) < 200, message
