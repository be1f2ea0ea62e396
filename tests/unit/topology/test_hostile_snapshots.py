"""Hostile snapshot and capacities files through `rebalance show`: exit code 2 and one line that
names the file and the entry and key at fault. Never a traceback (RecursionError,
UnicodeEncodeError, OverflowError) and never a silent acceptance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Rebalance = Callable[..., tuple[int, str]]
Doc = dict[str, Any]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 100, "net_out_bytes_per_sec": 100}
DEEP = "[" * 100_000 + "]" * 100_000


def snapshot_doc() -> Doc:
    return {
        "version": 1,
        "brokers": [{"id": 1, "rack": "a", "capacity": dict(CAP)},
                    {"id": 2, "rack": "b", "capacity": dict(CAP)}],
        "partitions": [{"topic": "orders", "partition": n, "replicas": [1, 2],
                        "size_bytes": 100, "bytes_in_per_sec": 10, "bytes_out_per_sec": 5}
                       for n in range(2)],
    }


def _edit(mutate: Callable[[Doc], object]) -> str:
    doc = snapshot_doc()
    mutate(doc)
    return json.dumps(doc)  # writes NaN/Infinity and escapes lone surrogates as \udc80


def _partition(**changes: object) -> str:
    return _edit(lambda doc: doc["partitions"][0].update(changes))


def _broker(**changes: object) -> str:
    return _edit(lambda doc: doc["brokers"][0].update(changes))


def _capacity(**changes: object) -> str:
    return _edit(lambda doc: doc["brokers"][0]["capacity"].update(changes))


def _rename(key: str, to: str) -> Callable[[Doc], object]:
    return lambda doc: [p.__setitem__(to, p.pop(key)) for p in doc["partitions"]]


def _broker_id(new: int) -> Callable[[Doc], object]:
    def mutate(doc: Doc) -> None:
        doc["brokers"][0]["id"] = new
        for p in doc["partitions"]:
            p["replicas"] = [new if r == 1 else r for r in p["replicas"]]
    return mutate


TOPIC_RULE = "'topic' must be a Kafka topic name (1 to 249 characters"
SNAPSHOT_CASES = {
    "nested 100,000 deep": (DEEP, "not valid JSON (nested too deeply at line 1 column"),
    "nested inside the document": ('{"version": 1, "brokers": ' + DEEP + "}",
                                   "not valid JSON (nested too deeply"),
    "lone surrogate in a topic": (_partition(topic="\udc80"), "lone leading surrogate in hex"),
    "lone surrogate in a rack": (_broker(rack="a\udc80"), "lone leading surrogate in hex"),
    "broker id 2**63": (_edit(_broker_id(2**63)),
                        "brokers[0]: 'id' must be at most 2147483647 (Kafka ids"),
    "broker id 2**31": (_edit(_broker_id(2**31)), "brokers[0]: 'id' must be at most 2147483647"),
    "replica id 2**63": (_partition(replicas=[1, 2**63]),
                         "partition orders-0: 'replicas'[1] must be at most 2147483647"),
    "partition Infinity": (_partition(partition=float("inf")),
                           "partitions[0]: 'partition' must be an integer, got inf"),
    "partition 2**63": (_partition(partition=2**63),
                        "partitions[0]: 'partition' must be at most 2147483647"),
    "partition 1.0": (_partition(partition=1.0), "'partition' must be an integer, got 1.0"),
    "topic with a space": (_partition(topic="my topic"), f"partitions[0]: {TOPIC_RULE}"),
    "topic with markup": (_partition(topic="[bold]x"), f"partitions[0]: {TOPIC_RULE}"),
    "empty topic": (_partition(topic=""), f"partitions[0]: {TOPIC_RULE}"),
    "topic of 250 characters": (_partition(topic="x" * 250), f"partitions[0]: {TOPIC_RULE}"),
    "topic '.'": (_partition(topic="."), "partition '.'-0: the topic must be a Kafka topic"),
    "topic '..'": (_partition(topic=".."), "partition '..'-0: the topic must be a Kafka topic"),
    "misspelt size_bytes": (_edit(_rename("size_bytes", "sizebytes")),
                            "2 problems: partition orders-0: unknown key 'sizebytes' (did you "
                            "mean 'size_bytes'?); partition orders-1: unknown key 'sizebytes'"),
    "misspelt rack": (_edit(lambda doc: doc["brokers"][0].update(racks="a")),
                      "broker 1: unknown key 'racks' (did you mean 'rack'?)"),
    "unknown broker key": (_broker(host="b1"),
                           "broker 1: unknown key 'host' (expected id, rack, capacity, alive, "
                           "cordoned, log_dirs, quota_window_seconds)"),
    "unknown capacity key": (_capacity(disk=5), "broker 1 capacity: unknown key 'disk' "
                             "(expected disk_bytes, net_in_bytes_per_sec, net_out_bytes_per_sec, "
                             "requests_per_sec)"),
    "misspelt top-level key": (_edit(lambda doc: doc.update(note=["x"])),
                               "unknown key 'note' (did you mean 'notes'?)"),
    "disk over 1 EB": (_capacity(disk_bytes=2e18),
                       "broker 1 capacity: 'disk_bytes' is implausibly large (over 1 EB)"),
    "network over 1 TB/s": (_capacity(net_out_bytes_per_sec=5e12), "broker 1 capacity: "
                            "'net_out_bytes_per_sec' is implausibly large (over 1 TB/s)"),
    "capacity 0": (_capacity(disk_bytes=0), "'disk_bytes' must be positive, got 0"),
    "a log dir listed twice": (_broker(log_dirs=[{"path": "/d"}, {"path": "/d"}]),
                               "broker 1: a log dir is listed twice"),
    "a log dir without a path": (_broker(log_dirs=[{"path": ""}, {"path": "/d"}]),
                                 "log dir '': a path must be a string of 1 to 4096 characters"),
    "a log dir of 0 bytes": (_broker(log_dirs=[{"path": "/a", "capacity_bytes": 0},
                                               {"path": "/b"}]),
                             "'capacity_bytes' must be positive, got 0"),
    "a log dir per replica missing": (_partition(log_dirs=["/d"]),
                                      "partition orders-0: log_dirs names 1 dir(s) for 2 "
                                      "replica(s)"),
    "alive as a word": (_broker(alive="yes"),
                        "broker 1: 'alive' must be true or false, got 'yes'"),
    "internal as a number": (_partition(internal=1),
                             "partition orders-0: 'internal' must be true or false, got 1"),
    "rack as a number": (_broker(rack=7), "broker 1: 'rack' must be a string or null, got 7"),
    "racked and rack-less live brokers": (
        _broker(rack=None), "broker(s) 1 have no rack while the other live brokers do (b): "
                            "Kafka's tools refuse rack-aware assignment"),
    "rack with a trailing blank": (_broker(rack="b "), "broker 1: rack 'b ' has blanks around "
                                   "it, which Kafka trims from broker.rack (a hand edit?): "
                                   "write 'b'"),
    "rack of blanks": (_broker(rack="  "), "broker 1: rack '  ' is blank (a hand edit?): write "
                       "the rack's name, or null for a broker without one"),
    "empty rack": (_broker(rack=""), "broker(s) 1: rack '' is empty (a hand edit?): write the "
                   "rack's name, or null for a broker without one"),
    "version true": (_edit(lambda doc: doc.update(version=True)),
                     "unsupported snapshot version True"),
}


@pytest.mark.parametrize("content, message", SNAPSHOT_CASES.values(), ids=SNAPSHOT_CASES.keys())
def test_hostile_snapshots_are_refused_in_one_line(tmp_path: Path, rebalance: Rebalance,
                                                   content: str, message: str) -> None:
    path = tmp_path / "snap.json"
    path.write_text(content)
    code, error = rebalance("show", str(path))
    assert (code, "\n" in error) == (2, False), error
    assert error.startswith(f"{path}: ") and message in error, error


ACCEPTED = {
    "unknown top-level key": lambda doc: doc.update(exported_by="another tool"),
    "internal topic marked": lambda doc: doc["partitions"].append(
        {"topic": "__consumer_offsets", "partition": 0, "replicas": [1], "internal": True}),
    "dead broker without a rack": lambda doc: doc["brokers"].append(
        {"id": 3, "rack": None, "alive": False, "capacity": dict(CAP)}),
    "no broker has a rack": lambda doc: [b.update(rack=None) for b in doc["brokers"]],
    "null rates and size": lambda doc: doc["partitions"][0].update(
        size_bytes=None, bytes_in_per_sec=None),
    "longest topic and largest ids": lambda doc: doc["partitions"].append(
        {"topic": "x" * 249, "partition": 2**31 - 1, "replicas": [1]}),
    "capacity at the limits": lambda doc: doc["brokers"][0]["capacity"].update(
        disk_bytes=1e18, net_in_bytes_per_sec=1e12),
}


@pytest.mark.parametrize("mutate", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_snapshots_within_the_rules_are_read(tmp_path: Path, rebalance: Rebalance,
                                             mutate: Callable[[Doc], object]) -> None:
    path = tmp_path / "snap.json"
    path.write_text(_edit(mutate))
    code, output = rebalance("show", str(path))
    assert code == 0, output


def test_every_problem_is_reported_up_to_a_cap(tmp_path: Path, rebalance: Rebalance) -> None:
    doc = snapshot_doc()
    doc["partitions"] = [{"topic": "t", "partition": n, "replicas": [1], "sizebytes": 1}
                         for n in range(12)]
    doc["brokers"][1]["id"] = "two"
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    code, error = rebalance("show", str(path))
    assert code == 2
    assert error.startswith(f"{path}: 13 problems: brokers[1]: 'id' must be an integer, got "
                            "'two'; partition t-0: unknown key 'sizebytes'"), error
    assert "partition t-6: unknown key" in error and "partition t-7" not in error
    assert error.endswith("; and 5 more")


def test_model_problems_are_all_reported(tmp_path: Path, rebalance: Rebalance) -> None:
    """Past the schema, what spans entries is reported for every entry too."""
    doc = snapshot_doc()
    doc["partitions"] += [dict(doc["partitions"][0]),
                          {"topic": "x", "partition": 0, "replicas": [1, 9]},
                          {"topic": "y", "partition": 0, "replicas": [2, 2]}]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    code, error = rebalance("show", str(path))
    assert code == 2
    assert "partition y-0: replica list [2, 2] repeats a broker" in error, error
    assert "partition orders-0 is listed more than once" in error
    assert "partition x-0: replica on unknown broker 9" in error


LINES = ("disk_bytes: 2TB", "net_in_bytes_per_sec: 1MB/s", "net_out_bytes_per_sec: 1MB/s")


def _caps(*brokers: str, default: tuple[str, ...] = LINES) -> str:
    text = "default:\n" + "".join(f"  {line}\n" for line in default)
    return text + ("brokers:\n" + "".join(f"  {b}\n" for b in brokers) if brokers else "")


CAPACITY_CASES = {
    "broker key 1.9": (_caps("1.9: {disk_bytes: 1TB}"),
                       "brokers.1.9: broker ids must be integers from 0 to 2147483647, got "
                       "float 1.9"),
    "broker key true": (_caps("true: {disk_bytes: 1TB}"),
                        "brokers.True: broker ids must be integers from 0 to 2147483647, got "
                        "bool True"),
    "broker key -1": (_caps("-1: {disk_bytes: 1TB}"), "broker ids must be integers from 0"),
    "broker key 2**63": (_caps(f"{2**63}: {{disk_bytes: 1TB}}"),
                         f"got int {2**63}"),
    "broker 1 and '1'": (_caps("1: {disk_bytes: 1TB}", "'1': {disk_bytes: 2TB}"),
                         "brokers.'1': broker 1 is given twice"),
    "1e30TB": (_caps(default=("disk_bytes: 1e30TB", *LINES[1:])),
               "default.disk_bytes: '1e30TB' is implausibly large (over 1 EB); check its unit"),
    "5TB/s network": (_caps(default=(LINES[0], "net_in_bytes_per_sec: 5TB/s", LINES[2])),
                      "'5TB/s' is implausibly large (over 1 TB/s)"),
    "misspelt key": (_caps(default=(*LINES[:2], "net_out_bytes_per_s: 1MB/s")),
                     "default: unknown key 'net_out_bytes_per_s' (did you mean "
                     "'net_out_bytes_per_sec'?)"),
    "nested 100,000 deep": ("default: " + DEEP + "\n", "not valid YAML (nested too deeply)"),
    "two problems": (_caps("1.9: {disk_bytes: 1TB}", "2: {disk_bytes: 1e30TB}"),
                     "2 problems: brokers.1.9: broker ids must be integers"),
}


@pytest.mark.parametrize("content, message", CAPACITY_CASES.values(), ids=CAPACITY_CASES.keys())
def test_hostile_capacities_are_refused_in_one_line(tmp_path: Path, rebalance: Rebalance,
                                                    content: str, message: str) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(_edit(lambda doc: [b.pop("capacity") for b in doc["brokers"]]))
    caps = tmp_path / "caps.yaml"
    caps.write_text(content)
    code, error = rebalance("show", str(snap), "--capacities", str(caps))
    assert (code, "\n" in error) == (2, False), error
    assert error.startswith(f"{caps}: ") and message in error, error


def test_quoted_broker_ids_are_integers(tmp_path: Path, rebalance: Rebalance) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(_edit(lambda doc: [b.pop("capacity") for b in doc["brokers"]]))
    caps = tmp_path / "caps.yaml"
    caps.write_text(_caps("'2': {disk_bytes: 4TB}"))
    code, output = rebalance("show", str(snap), "--capacities", str(caps))
    assert code == 0, output
