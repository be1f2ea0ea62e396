"""Plan file: Kafka's reassignment core, round trip, rejection of malformed files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict, read_plan, write_plan
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.model import Broker, Capacity, Partition, Resource, Topology

CAP = Capacity(1000, 1000, 1000)


def before() -> Topology:
    brokers = tuple(Broker(i, "a" if i < 3 else "b", CAP) for i in range(1, 5))
    parts = (Partition("t", 0, (1, 3), 100, 1.0, 2.0), Partition("t", 1, (2, 4), 50),
             Partition("u", 0, (1, 4), 30))
    return Topology(brokers, parts)


def sample_plan() -> Any:
    moves = (Move("t", 0, (1, 3), (2, 3), 100), Move("u", 0, (1, 4), (4, 1), 30))
    return make_plan_file(before(), moves, Goals(add_brokers=frozenset({2})),
                          Budget(max_bytes=10**6), SolverInfo(SolverStatus.FEASIBLE, 90, 0.05,
                                                               1.5, ("max_bytes",)),
                          "2026-01-01T00:00:00+00:00", ("a warning",))


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    plan = sample_plan()
    path = tmp_path / "plan.json"
    write_plan(path, plan)
    assert read_plan(path) == plan
    assert not list(tmp_path.glob(".plan.json.*"))


def test_kafka_core_lists_final_targets_of_changed_partitions() -> None:
    doc = plan_to_dict(sample_plan())
    assert doc["version"] == 1
    assert doc["partitions"] == [{"topic": "t", "partition": 0, "replicas": [2, 3]},
                                 {"topic": "u", "partition": 0, "replicas": [4, 1]}]
    assert doc["moves"][0] == {"topic": "t", "partition": 0, "current": [1, 3],
                               "target": [2, 3], "size_bytes": 100, "bytes_moved": 100}
    assert doc["moves"][1]["bytes_moved"] == 0
    assert doc["fingerprint"] == before().fingerprint()
    assert doc["solver"]["status"] == "feasible" and doc["solver"]["binding"] == ["max_bytes"]
    assert doc["totals"] == {"bytes_moved": 100, "moves": 2, "data_moves": 1}


def test_stats_before_and_after() -> None:
    plan = sample_plan()
    assert [b.replicas for b in plan.before.brokers] == [2, 1, 1, 2]
    assert [b.replicas for b in plan.after.brokers] == [1, 2, 1, 2]
    assert [b.leaders for b in plan.after.brokers] == [0, 2, 0, 1]
    disk = plan.before.resource(Resource.DISK)
    assert disk.average == pytest.approx(360 / 4000)
    assert disk.max_over_avg == pytest.approx(130 / 1000 / (360 / 4000))


def mutate(path: str, value: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(plan_to_dict(sample_plan())))
    target = doc
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is DELETE:
        del target[keys[-1]]
    elif isinstance(target, list):
        target[int(keys[-1])] = value
    else:
        target[keys[-1]] = value
    return doc


DELETE = object()


@pytest.mark.parametrize(("path", "value", "message"), [
    ("version", 2, "unsupported plan version 2"),
    ("moves", DELETE, "has no 'moves'"),
    ("fingerprint", DELETE, "missing 'fingerprint'"),
    ("moves.0.target", [2, 2], "repeats a broker"),
    ("moves.0.target", [2, 3, 4], "replication factor changes"),
    ("moves.0.current", "1,3", "'current' must be a list"),
    ("moves.0.size_bytes", -1, "'size_bytes' must be an integer >= 0, got -1"),
    ("partitions.0.replicas", [3, 2], "do not match its entry in 'moves'"),
    ("partitions.1", {"topic": "t", "partition": 0, "replicas": [2, 3]}, "listed twice"),
    ("solver.status", "great", "unknown status 'great'"),
    ("goals.tolerance", 3, "tolerance must be between 0 and 1"),
    ("before.resources", DELETE, "before: missing 'resources'"),
])
def test_malformed_plans_are_rejected(path: str, value: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        plan_from_dict(mutate(path, value))


def test_a_refused_move_is_the_only_problem_its_partition_entry_gets() -> None:
    doc = mutate("moves.0.target", [2, 2])
    doc["partitions"][0]["replicas"] = [2, 2]
    with pytest.raises(InputError) as caught:
        plan_from_dict(doc)
    assert "repeats a broker" in str(caught.value)
    assert "no entry in 'moves'" not in str(caught.value)


def test_partitions_must_cover_every_move() -> None:
    doc = plan_to_dict(sample_plan())
    doc["partitions"] = doc["partitions"][:1]
    with pytest.raises(InputError, match="lacks u-0"):
        plan_from_dict(doc)


def test_read_plan_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match=r"bad\.json: not valid JSON"):
        read_plan(bad)
    with pytest.raises(InputError, match="cannot read plan"):
        read_plan(tmp_path / "missing.json")
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"version": 1, "partitions": []}))
    with pytest.raises(InputError, match=r"bare\.json: not a rebalance plan"):
        read_plan(bare)


def test_empty_plan_round_trips(tmp_path: Path) -> None:
    topo = before()
    plan = make_plan_file(topo, (), Goals(), Budget(),
                          SolverInfo(SolverStatus.ALREADY_BALANCED, 0), "now")
    write_plan(tmp_path / "p.json", plan)
    assert read_plan(tmp_path / "p.json") == plan
    assert json.loads((tmp_path / "p.json").read_text())["partitions"] == []


def test_a_snapshot_given_as_a_plan_and_a_plan_as_a_snapshot_say_which_file_it_is(
        tmp_path: Path) -> None:
    from topology.snapshot import read_snapshot

    example = Path(__file__).parents[3] / "examples" / "cluster.json"
    with pytest.raises(InputError, match="this is a cluster snapshot, not a plan"):
        read_plan(example)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "moves": [], "partitions": []}))
    with pytest.raises(InputError, match="this is a plan file, not a cluster snapshot"):
        read_snapshot(plan)


def test_status_of_a_plan_with_the_journal_of_another_plan_is_refused(tmp_path: Path) -> None:
    """`status OTHER.json --journal RUN.journal`: the run is not shown as the plan's."""
    import subprocess
    import sys

    from executor.journal import header_record
    from executor.plan import ExecutionPlan

    plan = tmp_path / "plan.json"
    write_plan(plan, sample_plan())
    journal = tmp_path / "other.journal"
    other = ExecutionPlan.of([Move("t", 1, (2, 4), (3, 4), 50)])
    journal.write_text(json.dumps(header_record(other, {})) + "\n")
    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "status",
                             str(plan), "--journal", str(journal)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2, result.stderr
    assert "is the journal of another plan" in result.stderr
    own = tmp_path / "own.journal"
    own.write_text(json.dumps(header_record(ExecutionPlan.of(sample_plan().moves), {})) + "\n")
    shown = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "status",
                            str(plan), "--journal", str(own)],
                           capture_output=True, text=True, check=False)
    assert shown.returncode == 0, shown.stderr
