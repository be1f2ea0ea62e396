"""Hostile plan files through `rebalance diff` (and `execute`, which must refuse them before it
contacts the cluster): exit code 2 and one line naming the file, the entry and the key."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.core.errors import PlanError
from kafka_rebalance.files.planfile import plan_to_dict
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.snapshot import topology_from_dict

Rebalance = Callable[..., tuple[int, str]]
Doc = dict[str, Any]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
DEEP = "[" * 100_000 + "]" * 100_000


def plan_doc() -> Doc:
    """One move of t-1 (100 bytes) from brokers [3, 2] to [3, 4] on a four-broker cluster."""
    topology = topology_from_dict({
        "version": 1,
        "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP}
                    for i in (1, 2, 3, 4)],
        "partitions": [{"topic": "t", "partition": n, "replicas": r, "size_bytes": 100,
                        "bytes_in_per_sec": 10, "bytes_out_per_sec": 10}
                       for n, r in {0: [1, 2], 1: [3, 2], 2: [2, 1]}.items()]})
    plan = make_plan_file(topology, (Move("t", 1, (3, 2), (3, 4), 100),), Goals(), Budget(),
                          SolverInfo(SolverStatus.OPTIMAL, 100), "2026-01-01T00:00:00+00:00")
    return plan_to_dict(plan)


def _edit(mutate: Callable[[Doc], object]) -> str:
    doc = plan_doc()
    mutate(doc)
    return json.dumps(doc)


def _both(**changes: object) -> str:
    """The same change to the move and to Kafka's partitions entry (they must agree)."""
    def mutate(doc: Doc) -> None:
        doc["moves"][0].update(changes)
        doc["partitions"][0].update({"replicas" if k == "target" else k: v
                                     for k, v in changes.items()})
    return _edit(mutate)


def _move(**changes: object) -> str:
    return _edit(lambda doc: doc["moves"][0].update(changes))


def _section(*path: str, **changes: object) -> str:
    def mutate(doc: Doc) -> None:
        entry: Any = doc
        for key in path:
            entry = entry[int(key)] if isinstance(entry, list) else entry[key]
        entry.update(changes)
    return _edit(mutate)


def _dir_move(**changes: object) -> dict[str, object]:
    return {"topic": "t", "partition": 0, "broker": 1, "source": "/d1", "target": "/d2",
            "size_bytes": 100, **changes}


def _log_dirs(**changes: object) -> str:
    """The plan with a log-dir section (JBOD brokers), changed."""
    spread = {"dirs": 2, "outside": 0, "worst": 0.0}
    return _edit(lambda doc: doc.update(log_dirs={
        "tolerance": 0.1, "placements": [], "moves": [], "before": spread, "after": spread,
        **changes}))


PLAN_CASES = {
    "nested 100,000 deep": (DEEP, "not valid JSON (nested too deeply at line 1 column"),
    "nested moves": ('{"version": 1, "moves": ' + DEEP + "}", "nested too deeply"),
    "lone surrogate topic": (_both(topic="\udc80"), "not valid JSON (lone leading surrogate"),
    "partition 2**63": (_both(partition=2**63),
                        "moves[0]: 'partition' must be at most 2147483647 (Kafka ids"),
    "partition Infinity": (_both(partition=float("inf")),
                           "moves[0]: 'partition' must be an integer, got inf"),
    "target broker 2**31": (_both(target=[3, 2**31]),
                            "move t-1: 'target'[1] must be at most 2147483647"),
    "topic with a space": (_both(topic="a b"),
                           "moves[0]: 'topic' must be a Kafka topic name (1 to 249"),
    "topic '..'": (_both(topic=".."), "move '..'-1: the topic must be a Kafka topic name"),
    "negative bytes_moved": (_move(bytes_moved=-5),
                             "move t-1: 'bytes_moved' must be an integer >= 0, got -5"),
    "edited bytes_moved": (_move(bytes_moved=5), "move t-1: 'bytes_moved' is 5, but it copies "
                           "100 (100 bytes to 1 new replica(s)) (the plan was edited"),
    "negative total": (_section("totals", bytes_moved=-5),
                       "totals: 'bytes_moved' must be an integer >= 0, got -5"),
    "edited total": (_section("totals", bytes_moved=7),
                     "totals: 'bytes_moved' is 7, but the moves copy 100"),
    "misspelt move key": (_edit(lambda doc: doc["moves"][0].update(
        sizebytes=doc["moves"][0].pop("size_bytes"))),
        "move t-1: unknown key 'sizebytes' (did you mean 'size_bytes'?)"),
    "log_dirs in Kafka's partitions": (_section("partitions", "0", log_dirs=["any", "any"]),
                                       "partitions[0]: unknown key 'log_dirs' (expected topic, "
                                       "partition, replicas)"),
    "misspelt goal": (_section("goals", tolerence=0.2),
                      "goals: unknown key 'tolerence' (did you mean 'tolerance'?)"),
    "misspelt top-level key": (_edit(lambda doc: doc.update(warning=["x"])),
                               "unknown key 'warning' (did you mean 'warnings'?)"),
    "NaN statistic": (_section("before", "resources", "disk", average=float("nan")),
                      "before.resources.disk: 'average' must be a finite number, got nan"),
    "NaN solver gap": (_section("solver", gap=float("nan")),
                       "solver: 'gap' must be a finite number, got nan"),
    "alive as a word": (_section("after", "brokers", "0", alive="no"),
                        "after.brokers[0]: 'alive' must be true or false, got 'no'"),
    "moves not a list": (_edit(lambda doc: doc.update(moves={"t": 1})),
                         "'moves' must be a list of move objects"),
    "a dir chosen for a replica no move brings": (_log_dirs(placements=[
        {"topic": "t", "partition": 0, "broker": 4, "log_dir": "/d2"}]),
        "log_dirs: a dir is chosen for t-0 on broker 4, which no move brings there"),
    "a dir move on an unknown broker": (_log_dirs(moves=[_dir_move(broker=9)]),
                                        "log_dirs: t-0@9 names broker 9, not in the cluster"),
    "a dir move to its own dir": (_log_dirs(moves=[_dir_move(target="/d1")]),
                                  "log_dirs: t-0@1 moves from a dir to itself"),
    "a replica moved between dirs twice": (_log_dirs(moves=[_dir_move(), _dir_move()]),
                                           "log_dirs: t-0@1 moves between dirs twice"),
    "a dir move of negative size": (_log_dirs(moves=[_dir_move(size_bytes=-1)]),
                                    "'size_bytes' must be an integer >= 0, got -1"),
}


@pytest.mark.parametrize("content, message", PLAN_CASES.values(), ids=PLAN_CASES.keys())
def test_hostile_plans_are_refused_in_one_line(tmp_path: Path, rebalance: Rebalance,
                                               content: str, message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(content)
    code, error = rebalance("diff", str(path))
    assert (code, "\n" in error) == (2, False), error
    assert error.startswith(f"{path}: ") and message in error, error


@pytest.mark.parametrize("content", [PLAN_CASES[k][0] for k in (
    "lone surrogate topic", "partition 2**63", "partition Infinity", "topic with a space")],
    ids=["lone surrogate", "partition 2**63", "partition Infinity", "topic with a space"])
def test_execute_refuses_them_before_the_cluster(tmp_path: Path, rebalance: Rebalance,
                                                 content: str) -> None:
    """Exit code 2 (the plan), not 3 (the bootstrap here refuses connections)."""
    path = tmp_path / "plan.json"
    path.write_text(content)
    code, error = rebalance("execute", str(path), "--bootstrap", "127.0.0.1:1", "--prometheus",
                            "http://127.0.0.1:1", "--max-mbps", "5", "--dry-run")
    assert (code, error.startswith(f"{path}: ")) == (2, True), error


ACCEPTED = {
    "as written": lambda doc: None,
    "with a log-dir section": lambda doc: doc.update(log_dirs={
        "tolerance": 0.1, "moves": [_dir_move()],
        "placements": [{"topic": "t", "partition": 1, "broker": 4, "log_dir": "/d2"}],
        "before": {"dirs": 2, "outside": 2, "worst": 1.0},
        "after": {"dirs": 2, "outside": 0, "worst": 0.0}}),
    "unknown top-level key": lambda doc: doc.update(reviewed_by="ops"),
    "unknown key in a review section": lambda doc: doc["solver"].update(threads=8),
    "no totals": lambda doc: doc.pop("totals"),
}


@pytest.mark.parametrize("mutate", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_plans_within_the_rules_are_read(tmp_path: Path, rebalance: Rebalance,
                                         mutate: Callable[[Doc], object]) -> None:
    path = tmp_path / "plan.json"
    path.write_text(_edit(mutate))
    code, output = rebalance("diff", str(path))
    assert code == 0, output


def test_every_problem_is_reported(tmp_path: Path, rebalance: Rebalance) -> None:
    doc = plan_doc()
    doc["moves"][0]["bytes_moved"] = -1
    doc["goals"]["rack_aware"] = "yes"
    doc["solver"]["seconds"] = "fast"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    code, error = rebalance("diff", str(path))
    assert code == 2
    assert error == (f"{path}: 3 problems: move t-1: 'bytes_moved' must be an integer >= 0, got "
                     "-1; goals: 'rack_aware' must be true or false, got 'yes'; solver: "
                     "'seconds' must be a number, got 'fast'")


@pytest.mark.parametrize("build, message", [
    (lambda: Move("a b", 0, (1,), (2,), 1), "move 'a b'-0: the topic must be a Kafka topic"),
    (lambda: Move("\udc80", 0, (1,), (2,), 1), "the topic must be a Kafka topic name"),
    (lambda: Move("t", 2**31, (1,), (2,), 1), "must be integers from 0 to 2147483647"),
    (lambda: Move("t", 0, (1,), (2**63,), 1), "must be integers from 0 to 2147483647"),
    (lambda: Move("t", 0, (True,), (2,), 1), "must be integers from 0 to 2147483647"),
], ids=["topic with a space", "lone surrogate", "partition 2**31", "broker 2**63", "bool id"])
def test_a_move_refuses_what_kafka_cannot_hold(build: Callable[[], Move], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        build()
