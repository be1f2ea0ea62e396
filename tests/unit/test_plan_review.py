"""The plan review as people and programs read it: the "done by" column, the binding line
printed once, added brokers named for what they are, --json, and --bootstrap refused early."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.report.review import REVIEW_FORMAT, review_eta
from kafka_rebalance.usecases import plan as plan_usecase
from planner.goals import Budget, Goals
from planner.result import Move, PlanResult, SolverStatus
from tests.unit.conftest import RebalanceMain
from topology.model import Topology, replace_replicas

CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
# Brokers 1, 3 on rack a and 2, 4 on rack b; broker 4 holds nothing.
UNBALANCED = {0: [1, 2], 1: [3, 2], 2: [2, 1], 3: [2, 3]}
FILL_BROKER_4 = (Move("t", 1, (3, 2), (3, 4), 100), Move("t", 3, (2, 3), (4, 3), 100))
BINDING = ("--max-moves: the move budget of 1 moves is spent; still off: disk 50.0% off its "
           "average")
RATE = ("--rate-mbps", "0.0001")  # 100 B/s: a 100-byte move copies in 1 s


def write_snapshot(path: Path, offline: tuple[int, ...] = ()) -> Path:
    doc = {"version": 1,
           "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP,
                        "alive": i not in offline} for i in (1, 2, 3, 4)],
           "partitions": [{"topic": "t", "partition": n, "replicas": r, "size_bytes": 100,
                           "bytes_in_per_sec": 10, "bytes_out_per_sec": 10}
                          for n, r in UNBALANCED.items()]}
    path.write_text(json.dumps(doc))
    return path


def fake_solver(moves: tuple[Move, ...], status: SolverStatus = SolverStatus.OPTIMAL,
                binding: tuple[str, ...] = ()) -> Any:
    def solve(topology: Topology, goals: Goals, budget: Budget) -> PlanResult:
        after = replace_replicas(topology, {m.key: m.target for m in moves})
        return PlanResult(topology, after, moves, status, 200, 0.0, binding, 0.1)
    return lambda: solve


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    return write_snapshot(tmp_path / "snap.json")


def test_moves_show_when_each_is_done_counted_from_the_start(
        snap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        rebalance_main: RebalanceMain) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4))
    out = tmp_path / "plan.json"
    shown = rebalance_main("plan", "--snapshot", str(snap), "--out", str(out), *RATE)
    assert shown.code == 0, shown.err
    text = " ".join(shown.out.split())
    assert "done by ┃" in text and "ETA ┃" not in text
    assert "done by = time from the start of the run until the move is done" in text
    # 4 s start-up, 1.1 s copying (at 90% of the rate), then the second move takes broker 4
    # over as the first copy ends (no gap): it is done 6.2 s in
    assert "│ 100B │ +5s │" in text and "│ 100B │ +6s │" in text, shown.out
    timeline = review_eta(read_plan(out), 100.0).one_at_a_time
    assert [slot.copy_end for slot in timeline.moves] == pytest.approx([4 + 1 / 0.9, 4 + 2 / 0.9])


def test_the_binding_explanation_is_printed_once(snap: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 rebalance_main: RebalanceMain) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(
        FILL_BROKER_4[:1], SolverStatus.BEST_EFFORT, (BINDING,)))
    out = tmp_path / "plan.json"
    planned = rebalance_main("plan", "--snapshot", str(snap), "--out", str(out))
    assert planned.code == 0, planned.err
    assert any("is not within" in w for w in read_plan(out).warnings)  # the validator's
    for shown in (planned, rebalance_main("diff", str(out))):
        text = " ".join(shown.out.split())
        assert text.count("the move budget of 1 moves is spent") == 1, shown.out
        assert "Full balance is not reached: --max-moves" in text
        assert "is not within" not in text  # the same fact, per resource, left out
        assert "best_effort (full balance not reached: the closest found)" in text


def test_warnings_stay_when_nothing_binds(snap: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          rebalance_main: RebalanceMain) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4[:1]))
    planned = rebalance_main("plan", "--snapshot", str(snap), "--out", str(tmp_path / "p.json"))
    assert planned.code == 0, planned.err
    text = " ".join(planned.out.split())
    assert "warning: disk is not within" in text and "Full balance" not in text


def test_an_added_broker_that_holds_replicas_says_so(snap: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     rebalance_main: RebalanceMain) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4))
    shown = rebalance_main("plan", "--snapshot", str(snap), "--out", str(tmp_path / "p.json"),
                           "--add-broker", "1", "--add-broker", "4")
    assert shown.code == 0, shown.err
    assert "1 (added, already holds 2 replicas)" in shown.out, shown.out
    assert "4 (new)" in shown.out
    assert shown.err_lines == ["warning: --add-broker 1: broker 1 already holds 2 replicas, so "
                               "it is not a new broker; the plan balances it like the others"]


def test_an_offline_broker_cannot_be_added(tmp_path: Path,
                                           rebalance_main: RebalanceMain) -> None:
    snap = write_snapshot(tmp_path / "snap.json", offline=(4,))
    out = tmp_path / "p.json"
    refused = rebalance_main("plan", "--snapshot", str(snap), "--out", str(out),
                             "--add-broker", "4")
    assert refused.code == InputError.exit_code
    assert refused.err_lines[0].startswith("error: --add-broker 4: broker 4 is offline")
    assert not out.exists()


def test_json_review_is_one_document_with_brokers_moves_totals_and_eta(
        snap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        rebalance_main: RebalanceMain) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4))
    out = tmp_path / "plan.json"
    planned = rebalance_main("plan", "--snapshot", str(snap), "--out", str(out),
                             "--add-broker", "4", "--json", *RATE)
    assert planned.code == 0, planned.err
    doc = json.loads(planned.out)  # stdout holds the document and nothing else
    assert (doc["format"], doc["version"]) == (REVIEW_FORMAT, 1)
    assert doc["goals"]["add_brokers"] == [4] and doc["goals"]["tolerance"] == 0.1
    brokers = {b["id"]: b for b in doc["brokers"]}
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3, 4]
    assert brokers[4]["role"] == "added" and brokers[2]["role"] is None
    assert brokers[4]["before"]["utilization"] == {"disk": 0.0, "net_in": 0.0, "net_out": 0.0}
    assert brokers[4]["after"]["utilization"]["disk"] == pytest.approx(0.2)
    assert brokers[2]["before"]["replicas"] == 4 and brokers[2]["after"]["replicas"] == 2
    assert [(m["topic"], m["partition"], m["bytes"], m["done_by_seconds"])
            for m in doc["moves"]] == [("t", 1, 100, pytest.approx(4 + 1 / 0.9)),
                                       ("t", 3, 100, pytest.approx(4 + 2 / 0.9))]
    assert doc["moves"][0]["added_brokers"] == [4] and doc["moves"][0]["removed_brokers"] == [2]
    assert doc["totals"]["bytes_moved"] == 200 and doc["totals"]["balanced"] is True
    assert doc["totals"]["moved_over_lower_bound"] == pytest.approx(1.0)
    eta = doc["eta"]
    assert (eta["start_seconds"], eta["copy_efficiency"]) == (4, 0.9)
    assert (eta["copying_seconds"], eta["waiting_seconds"], eta["total_seconds"]) == \
        pytest.approx((2 / 0.9, 0, 4 + 2 / 0.9))
    # both copies go into broker 4: nothing copies faster than its 2 s at the full rate
    assert (eta["concurrency_auto_seconds"], eta["physical_limit_seconds"]) == \
        pytest.approx((4 + 2 / 0.9, 2))
    assert doc["warnings"] == [] and doc["solver"]["status"] == "optimal"
    shown = rebalance_main("diff", str(out), "--json", *RATE)
    assert json.loads(shown.out) == doc  # diff reviews the saved plan the same way


def test_a_bad_bootstrap_is_refused_before_kafka_is_contacted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        rebalance_main: RebalanceMain) -> None:
    def never(*args: object) -> Topology:
        raise AssertionError("the cluster was contacted")

    monkeypatch.setattr(plan_usecase, "read_live", never)
    out = tmp_path / "p.json"
    refused = rebalance_main("plan", "--bootstrap", "127.0.0.1:99999", "--out", str(out))
    assert refused.code == InputError.exit_code
    assert refused.err_lines == ["error: --bootstrap: '127.0.0.1:99999': the port 99999 is not "
                                 "in 1..65535; give HOST:PORT[,HOST:PORT...], e.g. "
                                 "localhost:9092 or [::1]:9092"]
    assert not out.exists()


def test_an_empty_plan_is_timed_as_nothing_to_move(tmp_path: Path,
                                                   rebalance_main: RebalanceMain) -> None:
    """A cluster without partitions: the ETA says nothing to move, not '0s (4s start-up +
    0s copying ...)'."""
    doc = json.loads((Path(__file__).parents[2] / "examples" / "cluster.json").read_text())
    doc["partitions"] = []
    snapshot = tmp_path / "empty.json"
    snapshot.write_text(json.dumps(doc))
    result = rebalance_main("plan", "--snapshot", str(snapshot), "--out", str(tmp_path / "p.json"))
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "ETA, one at a time │ 0s (nothing to move)" in text, text
    assert "start-up" not in text
