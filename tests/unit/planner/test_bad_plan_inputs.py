"""Malformed plan files, weights files and flags of `rebalance plan` / `diff`: exit code 2 and
a message naming what to fix, never a stack trace."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.files.planfile import plan_to_dict
from kafka_rebalance.files.weights import read_weights
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.model import TopicPartition
from topology.snapshot import topology_from_dict

Rebalance = Callable[..., tuple[int, str]]
Doc = dict[str, Any]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}


def snapshot_doc() -> Doc:
    """Brokers 1, 3 on rack a and 2, 4 on rack b; broker 4 holds nothing."""
    return {"version": 1,
            "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP}
                        for i in (1, 2, 3, 4)],
            "partitions": [{"topic": "t", "partition": n, "replicas": r, "size_bytes": 100,
                            "bytes_in_per_sec": 10, "bytes_out_per_sec": 10}
                           for n, r in {0: [1, 2], 1: [3, 2], 2: [2, 1]}.items()]}


def plan_doc() -> Doc:
    topology = topology_from_dict(snapshot_doc())
    moves = (Move("t", 1, (3, 2), (3, 4), 100),)
    plan = make_plan_file(topology, moves, Goals(), Budget(),
                          SolverInfo(SolverStatus.OPTIMAL, 100), "2026-01-01T00:00:00+00:00")
    return plan_to_dict(plan)


def _move(**changes: object) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        doc["moves"][0].update(changes)
        if "target" in changes:
            doc["partitions"][0]["replicas"] = changes["target"]
        if "partition" in changes:
            doc["partitions"][0]["partition"] = changes["partition"]
    return mutate


def _section(section: str, **changes: object) -> Callable[[Doc], None]:
    return lambda doc: doc[section].update(changes)


PLAN_CASES = {
    "negative partition": (_move(partition=-1), "moves[0]: 'partition' must be an integer >= 0"),
    "negative broker id": (_move(target=[3, -4]), "move t-1: 'target'[1] must be an integer >= 0"),
    "current repeats a broker": (_move(current=[3, 3]), "current replicas [3, 3] repeat"),
    "unknown target broker": (_move(target=[3, 9]), "broker 9 is not in the cluster"),
    "partitions entry without move": (
        lambda doc: doc["partitions"].append({"topic": "x", "partition": 0, "replicas": [1]}),
        "x-0 has no entry in 'moves'"),
    "absurd move size": (_move(size_bytes=10**30), "'size_bytes' is implausibly large"),
    "rack_aware as a string": (_section("goals", rack_aware="no"),
                               "'rack_aware' must be true or false"),
    "binding as a string": (_section("solver", binding="abc"),
                            "'binding' must be a list of strings"),
    "warnings as a string": (lambda doc: doc.__setitem__("warnings", "careful"),
                             "'warnings' must be a list of strings"),
    "seed as a string": (_section("budget", seed="x"), "budget: 'seed' must be an integer"),
    "time limit as a string": (_section("budget", time_limit_s="x"),
                               "budget: 'time_limit_s' must be"),
    "negative move budget": (_section("budget", max_moves=-1),
                             "budget: 'max_moves' must be an integer >= 0"),
    "solver seconds as a string": (_section("solver", seconds="x"), "solver: 'seconds' must be"),
    # edited targets the planner would never write (the review would show them as planned)
    "target crowds a rack": (_move(target=[3, 1]), "move t-1: target [3, 1] puts 2 replicas in "
                                                   "rack a (2 racks); the plan was edited"),
    "target on an offline broker": (
        lambda doc: doc["before"]["brokers"][3].update(alive=False),
        "move t-1: target [3, 4] keeps a replica on broker(s) [4], offline or removed"),
    "target on a cordoned broker": (_section("goals", cordoned_brokers=[4]),
                                    "move t-1: adds a replica on cordoned broker(s) [4]"),
}


@pytest.mark.parametrize("mutate, message", PLAN_CASES.values(), ids=PLAN_CASES.keys())
def test_bad_plan_files_are_input_errors(tmp_path: Path, rebalance: Rebalance,
                                         mutate: Callable[[Doc], None], message: str) -> None:
    doc = plan_doc()
    mutate(doc)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    code, error = rebalance("diff", str(path))
    assert code == 2
    assert message in error and str(path) in error


def test_the_unmutated_plan_is_accepted(tmp_path: Path, rebalance: Rebalance) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_doc()))
    code, output = rebalance("diff", str(path))
    assert code == 0, output


def test_binary_plan_file_is_an_input_error(tmp_path: Path, rebalance: Rebalance) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(bytes(range(256)))
    assert rebalance("diff", str(path)) == (2, f"{path}: not a JSON text file (it is not UTF-8); "
                                               "give the plan file itself")


@pytest.mark.parametrize("flags, message", [
    (["--max-mbps", "nan"], "--max-mbps must be a positive finite number"),
    (["--rate-mbps", "inf"], "--max-mbps must be a positive finite number"),
    (["--show-moves", "-1"], "--show-moves must not be negative"),
    (["--max-mbps", "1e-300"], "--max-mbps 1e-300 is under one byte per second"),
], ids=["rate NaN", "rate infinite", "negative show-moves", "rate under 1 B/s"])
def test_bad_review_flags_of_diff(tmp_path: Path, rebalance: Rebalance, flags: list[str],
                                  message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_doc()))
    code, error = rebalance("diff", str(path), *flags)
    assert (code, message in error) == (2, True), error


@pytest.mark.parametrize("flags, message", [
    (["--time-limit", "nan"], "--time-limit must be a positive number of seconds"),
    (["--time-limit", "inf"], "--time-limit must be a positive number of seconds"),
    (["--max-mbps", "nan"], "--max-mbps must be a positive finite number"),
    (["--out", "{tmp}"], "it is a directory"),
    (["--out", "/proc/no-such-dir/plan.json"], "choose a writable path"),
    (["--max-moves", "0"], "--max-moves 0 allows no move"),
], ids=["time limit NaN", "time limit infinite", "rate NaN", "out is a directory",
        "out unwritable", "no move allowed"])
def test_bad_plan_flags(tmp_path: Path, rebalance: Rebalance, flags: list[str],
                        message: str) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_doc()))
    args = [a.replace("{tmp}", str(tmp_path)) for a in flags]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "plan.json")]
    code, error = rebalance("plan", "--snapshot", str(snap), "--time-limit", "5", *args)
    assert (code, message in error) == (2, True), error
    assert not (tmp_path / "plan.json").exists()


def _weights_row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {"topic": "t", "partition": 0, "bytes_in_per_sec": 1.0,
                              "bytes_out_per_sec": 1.0, "size_bytes": 100.0,
                              "size_growth_bytes_per_day": 0.0}
    row.update(changes)
    return row


WEIGHTS_CASES = {
    "partition as a word": (_weights_row(partition="zero"), "has partition 'zero'"),
    "fractional partition": (_weights_row(partition=0.5), "has partition '0.5'"),
    "infinite rate": (_weights_row(bytes_in_per_sec=float("inf")),
                      "too large bytes_in_per_sec (inf); give a finite"),
    "absurd size": (_weights_row(size_bytes=1e300), "size_bytes (1e+300); give a finite number"),
    "infinite growth": (_weights_row(size_growth_bytes_per_day=float("inf")),
                        "size_growth_bytes_per_day (inf); give a finite"),
    "rate as a string": (_weights_row(bytes_out_per_sec="100"),
                         "non-numeric, negative or too large bytes_out_per_sec ('100')"),
    "partition as a string": (_weights_row(partition="3"),
                              "has partition '3'; partitions are integers"),
}


@pytest.mark.parametrize("row, message", WEIGHTS_CASES.values(), ids=WEIGHTS_CASES.keys())
def test_bad_weights_rows_are_input_errors(tmp_path: Path, rebalance: Rebalance,
                                           row: dict[str, object], message: str) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_doc()))
    weights = tmp_path / "weights.parquet"
    pd.DataFrame([row]).to_parquet(weights)
    code, error = rebalance("plan", "--snapshot", str(snap), "--weights", str(weights),
                            "--out", str(tmp_path / "plan.json"))
    assert (code, message in error) == (2, True), error


def _json_lines(edit: Callable[[str], str]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(edit(json.dumps(_weights_row()) + "\n"))
    return write


def _parquet_nan(column: str) -> Callable[[Path], None]:
    """A real NaN in Parquet (pandas would store a NaN as null, which means 'not measured')."""
    def write(path: Path) -> None:
        pq.write_table(pa.Table.from_pylist([_weights_row(**{column: math.nan})]), path)
    return write


NAN_WEIGHTS = {
    "NaN literal": ("w.json", _json_lines(lambda t: t.replace('"bytes_in_per_sec": 1.0',
                                                               '"bytes_in_per_sec": NaN')),
                    "weights {path}: partition t-0 has NaN bytes_in_per_sec; give a finite "
                    "number, or null where nothing was measured"),
    "NaN as text": ("w.json", _json_lines(lambda t: t.replace('"size_bytes": 100.0',
                                                               '"size_bytes": "NaN"')),
                    "partition t-0 has a non-numeric, negative or too large size_bytes ('NaN')"),
    "NaN in Parquet": ("w.parquet", _parquet_nan("size_growth_bytes_per_day"),
                       "partition t-0 has NaN size_growth_bytes_per_day"),
    "nested 100,000 deep": ("w.json", lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
                            "weights {path}: row 1 is not valid JSON (nested too deeply"),
    "a row that is not an object": ("w.json", lambda p: p.write_text("[1, 2]\n"),
                                    "weights {path}: row 1 is not a JSON object"),
}


@pytest.mark.parametrize("name, write, message", NAN_WEIGHTS.values(), ids=NAN_WEIGHTS.keys())
def test_nan_and_undecodable_weights_are_refused(tmp_path: Path, rebalance: Rebalance,
                                                 name: str, write: Callable[[Path], None],
                                                 message: str) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_doc()))
    weights = tmp_path / name
    write(weights)
    code, error = rebalance("plan", "--snapshot", str(snap), "--weights", str(weights),
                            "--out", str(tmp_path / "plan.json"))
    assert (code, "\n" in error) == (2, False), error
    assert message.format(path=weights) in error, error


def test_null_weights_mean_not_measured(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_weights_row(bytes_in_per_sec=None, topic="007")) + "\n")
    weight = read_weights(path)[TopicPartition("007", 0)]
    assert (weight.bytes_in_per_sec, weight.bytes_out_per_sec) == (None, 1.0)


@pytest.mark.parametrize(("horizon", "message"), [
    ("inf", "--horizon must not be negative or infinite"),
    ("nan", "--horizon must not be negative or infinite"),
    ("1e300", "--horizon 1e+300 is more than 3650 days (ten years) ahead")])
def test_non_finite_or_far_horizon_is_refused(tmp_path: Path, rebalance: Rebalance,
                                              horizon: str, message: str) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_doc()))
    weights = tmp_path / "weights.parquet"
    pd.DataFrame([_weights_row()]).to_parquet(weights)
    code, error = rebalance("plan", "--snapshot", str(snap), "--weights", str(weights),
                            "--horizon", horizon, "--out", str(tmp_path / "plan.json"))
    assert (code, message in error) == (2, True), error


def test_diff_capacities_need_a_snapshot(tmp_path: Path, rebalance: Rebalance) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_doc()))
    code, error = rebalance("diff", str(path), "--capacities", str(tmp_path / "caps.yaml"))
    assert (code, error) == (2, "--capacities applies to --snapshot: give both, or neither")


def test_plan_without_any_alive_broker_is_refused(tmp_path: Path, rebalance: Rebalance) -> None:
    doc = snapshot_doc()
    for broker in doc["brokers"]:
        broker["alive"] = False
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    code, error = rebalance("plan", "--snapshot", str(snap), "--out", str(tmp_path / "p.json"))
    assert (code, "no broker would remain" in error) == (2, True), error
    assert not (tmp_path / "p.json").exists()


def test_a_rack_emptied_by_dead_brokers_is_not_called_a_removal(tmp_path: Path,
                                                                 rebalance: Rebalance) -> None:
    doc = snapshot_doc()
    for broker in doc["brokers"]:
        broker["alive"] = broker["rack"] == "a"
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    code, error = rebalance("plan", "--snapshot", str(snap), "--out", str(tmp_path / "p.json"))
    assert code == 2
    assert "without the removed and dead brokers, no broker is left in rack b" in error


def test_a_dead_broker_of_unknown_rack_is_drained_without_a_phantom_rack(
        tmp_path: Path, rebalance: Rebalance) -> None:
    """Broker 2 died and was unregistered: the snapshot lists it alive=false with no rack.
    Partitions of RF 3 span racks a and b only; 'None' is no third rack to keep."""
    doc = snapshot_doc()
    doc["brokers"][1].update(rack=None, alive=False)
    for part, replicas in zip(doc["partitions"], ([1, 2, 3], [3, 2, 4], [2, 1, 4]), strict=True):
        part["replicas"] = replicas
    snap, out = tmp_path / "snap.json", tmp_path / "p.json"
    snap.write_text(json.dumps(doc))
    code, error = rebalance("plan", "--snapshot", str(snap), "--remove-broker", "2",
                            "--out", str(out))
    assert code == 0, error
    plan = json.loads(out.read_text())
    assert plan["partitions"] and all(2 not in p["replicas"] for p in plan["partitions"])


@pytest.mark.parametrize("flags", [[], ["--remove-broker", "3"]], ids=["heal", "drain"])
def test_a_partition_with_no_live_replica_stays_and_is_told(
        tmp_path: Path, rebalance: Rebalance, flags: list[str]) -> None:
    """Broker 3 died holding t-1 on 3 and 2 and t-3 alone: t-1 is healed from 2, but t-3 has
    no leader to copy from, so no plan may move it (its reassignment could never finish)."""
    doc = snapshot_doc()
    doc["brokers"][2]["alive"] = False
    doc["partitions"].append({"topic": "t", "partition": 3, "replicas": [3], "size_bytes": 100,
                              "bytes_in_per_sec": 10, "bytes_out_per_sec": 10})
    snap, out = tmp_path / "snap.json", tmp_path / "p.json"
    snap.write_text(json.dumps(doc))
    code, error = rebalance("plan", "--snapshot", str(snap), *flags, "--out", str(out))
    assert code == 0, error
    moved = {(m["topic"], m["partition"]) for m in json.loads(out.read_text())["moves"]}
    assert ("t", 1) in moved and ("t", 3) not in moved
    text = " ".join(error.split())
    assert "1 partition(s) have no live replica (t-3): every replica is on offline broker(s) " \
           "[3], so no move can copy them and the plan leaves them there" in text
