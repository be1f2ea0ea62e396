"""`rebalance plan` and `rebalance diff` on small snapshots: exit codes, messages, plan files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import cli
from kafka_rebalance.commands import render
from kafka_rebalance.core.errors import InputError, PlanError
from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.usecases import plan as plan_usecase
from planner.goals import Budget, Goals
from planner.result import Move, PlanResult, SolverStatus
from planner.validate import validate_plan
from topology.model import Topology, replace_replicas
from topology.snapshot import read_snapshot

ROOT = Path(__file__).resolve().parents[2]
CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
UNBALANCED = {0: [1, 2], 1: [3, 2], 2: [2, 1], 3: [2, 3]}
BALANCED = {0: [1, 2], 1: [3, 4], 2: [2, 1], 3: [4, 3]}
FILL_BROKER_4 = (Move("t", 1, (3, 2), (3, 4), 100), Move("t", 3, (2, 3), (4, 3), 100))


def write_snapshot(path: Path, replicas: dict[int, list[int]]) -> Path:
    """Brokers 1, 3 on rack a and 2, 4 on rack b; four RF-2 partitions of 100 bytes."""
    doc = {
        "version": 1,
        "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP}
                    for i in (1, 2, 3, 4)],
        "partitions": [{"topic": "t", "partition": n, "replicas": r, "size_bytes": 100,
                        "bytes_in_per_sec": 10, "bytes_out_per_sec": 10}
                       for n, r in replicas.items()],
    }
    path.write_text(json.dumps(doc))
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def fake_solver(moves: tuple[Move, ...], status: SolverStatus = SolverStatus.OPTIMAL,
                calls: list[Goals] | None = None) -> Any:
    """A stand-in for planner.solve.plan that returns fixed moves."""
    def solve(topology: Topology, goals: Goals, budget: Budget) -> PlanResult:
        if calls is not None:
            calls.append(goals)
        after = replace_replicas(topology, {m.key: m.target for m in moves})
        return PlanResult(topology, after, moves, status, 180, 0.11, ("none",), 0.2)
    return lambda: solve


def test_balanced_snapshot_writes_an_empty_plan(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap.json", BALANCED)
    out = tmp_path / "plan.json"
    result = run_cli("plan", "--snapshot", str(snap), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "already balanced" in result.stdout
    doc = json.loads(out.read_text())
    assert doc["partitions"] == [] and doc["moves"] == []
    assert doc["solver"]["status"] == "already_balanced"


def test_unknown_added_broker_is_named(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    out = tmp_path / "plan.json"
    result = run_cli("plan", "--snapshot", str(snap), "--add-broker", "9", "--out", str(out))
    assert result.returncode == InputError.exit_code
    assert "--add-broker 9: no broker 9" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_unknown_removed_broker_is_named(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    result = run_cli("plan", "--snapshot", str(snap), "--remove-broker", "7",
                     "--out", str(tmp_path / "p.json"))
    assert result.returncode == InputError.exit_code
    assert "--remove-broker 7" in result.stderr


def test_broker_flags_take_comma_lists_like_kafkas_tools(tmp_path: Path) -> None:
    from kafka_rebalance.commands.plan_cmd import broker_ids

    assert broker_ids(["13,14", "15"], "--add-broker") == (13, 14, 15)
    assert broker_ids([" 7 , 8"], "--remove-broker") == (7, 8)
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    out = tmp_path / "p.json"
    for bad in ("13;14", "a", "13,,14"):
        result = run_cli("plan", "--snapshot", str(snap), "--add-broker", bad, "--out", str(out))
        assert result.returncode == InputError.exit_code, result.stderr
        assert "one per flag or separated by commas" in result.stderr
        assert not out.exists()
    for bad in ("\u0661\u0663", "-1", "99999999999"):  # Arabic-Indic 13, negative, > int32
        with pytest.raises(InputError, match=r"give broker ids \(0 to 2147483647, in ASCII"):
            broker_ids([bad], "--add-broker")


def test_needs_exactly_one_source(tmp_path: Path) -> None:
    result = run_cli("plan", "--out", str(tmp_path / "p.json"))
    assert result.returncode == InputError.exit_code
    assert "exactly one of --snapshot" in result.stderr


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli.app, args)


def test_plan_writes_validated_ordered_plan_and_review(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Goals] = []
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4, calls=calls))
    monkeypatch.setattr(render.console, "width", 160)  # the full layout, whatever ran before
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    out = tmp_path / "plan.json"
    result = invoke(["plan", "--snapshot", str(snap), "--add-broker", "4", "--out", str(out),
                     "--max-bytes", "1kB", "--rate-mbps", "0.0001"])
    assert result.exit_code == 0, result.output
    assert calls[0].add_brokers == frozenset({4})
    plan = read_plan(out)
    assert [m.name for m in plan.moves] == ["t-1", "t-3"]
    assert plan.budget.max_bytes == 1000
    assert plan.fingerprint == read_snapshot(snap).fingerprint()
    report = validate_plan(read_snapshot(snap), plan.moves, plan.goals)
    assert report.valid and report.balanced
    assert "Totals" in result.output and "200B" in result.output
    assert "1.111" in result.output  # bytes moved / lower bound = 200 / 180
    # ETA: 2 x 100 bytes at 90% of 100 B/s; the second move takes the first one's broker
    # over as its copy ends, and the first starts after the start-up (no copy before the run)
    eta = next(line for line in result.output.splitlines() if "ETA, one at a time" in line)
    assert "│ 6s (4s start-up + 2s copying at 90% of the rate + 0s of gates" in eta, eta


def test_plan_json_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4))
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    result = invoke(["plan", "--snapshot", str(snap), "--out", str(tmp_path / "p.json"),
                     "--json"])
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    totals = review["totals"]
    assert (totals["moves"], totals["bytes_moved"], totals["balanced"]) == (2, 200, True)
    assert review["resources"]["disk"]["max_over_avg_before"] == pytest.approx(2.0)


def test_invalid_solver_plan_is_never_written(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    same_rack = (Move("t", 1, (3, 2), (3, 1), 100),)
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(same_rack))
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    out = tmp_path / "plan.json"
    result = invoke(["plan", "--snapshot", str(snap), "--out", str(out)])
    assert isinstance(result.exception, PlanError)
    assert "rack a holds 2" in str(result.exception)
    assert not out.exists()


def test_diff_shows_the_review_and_detects_a_stale_plan(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4))
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    out = tmp_path / "plan.json"
    assert invoke(["plan", "--snapshot", str(snap), "--out", str(out)]).exit_code == 0
    shown = invoke(["diff", str(out), "--snapshot", str(snap)])
    assert shown.exit_code == 0, shown.output
    assert "t-3" in shown.output and "Balance" in shown.output
    moved_on = write_snapshot(tmp_path / "now.json", BALANCED)
    stale = invoke(["diff", str(out), "--snapshot", str(moved_on)])
    assert isinstance(stale.exception, PlanError)
    assert "stale" in str(stale.exception)


def test_diff_rejects_a_malformed_plan(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"version": 1, "partitions": []}))
    result = run_cli("diff", str(bad))
    assert result.returncode == InputError.exit_code
    assert "not a rebalance plan" in result.stderr


def test_horizon_without_weights_is_refused(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap.json", BALANCED)
    result = run_cli("plan", "--snapshot", str(snap), "--horizon", "30",
                     "--out", str(tmp_path / "p.json"))
    assert result.returncode == InputError.exit_code
    assert "--horizon needs --weights" in result.stderr


def test_weights_make_a_balanced_snapshot_unbalanced(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Goals] = []
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver((), SolverStatus.BEST_EFFORT,
                                                              calls))
    snap = write_snapshot(tmp_path / "snap.json", BALANCED)
    weights = tmp_path / "w.jsonl"
    weights.write_text("\n".join(json.dumps(
        {"topic": "t", "partition": n, "bytes_in_per_sec": 10, "bytes_out_per_sec": 10,
         "size_bytes": 100, "size_growth_bytes_per_day": 50 if n == 0 else 0})
        for n in range(4)))
    out = tmp_path / "p.json"
    result = invoke(["plan", "--snapshot", str(snap), "--weights", str(weights),
                     "--horizon", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1  # t-0 grows to 600 bytes: the solver is asked
    assert "Full balance is not reached" in result.output


def test_real_solver_fills_a_new_broker(tmp_path: Path) -> None:
    from topology.snapshot import write_snapshot as write_topology
    from topology.synthetic import generate_cluster

    snap = tmp_path / "snap.json"
    topology = generate_cluster(brokers=6, new_brokers=1, racks=3, partitions=600, seed=3)
    write_topology(snap, topology)
    new = max(topology.broker_ids)
    out = tmp_path / "plan.json"
    result = run_cli("plan", "--snapshot", str(snap), "--add-broker", str(new),
                     "--time-limit", "5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    plan = read_plan(out)
    assert any(new in m.target for m in plan.moves)
    assert validate_plan(topology, plan.moves, plan.goals).valid
    if plan.solver.status is not SolverStatus.BEST_EFFORT:  # the bound is for full balance
        assert plan.bytes_moved >= plan.solver.lower_bound_bytes


def test_removing_a_racks_last_broker_is_refused(tmp_path: Path) -> None:
    racks = [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c")]
    doc = {"version": 1,
           "brokers": [{"id": i, "rack": r, "capacity": CAP} for i, r in racks],
           "partitions": [{"topic": "t", "partition": n, "replicas": [1 + n % 2, 3 + n % 2, 5],
                           "size_bytes": 10} for n in range(4)]}
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    out = tmp_path / "plan.json"
    result = run_cli("plan", "--snapshot", str(snap), "--remove-broker", "5", "--out", str(out))
    assert result.returncode in (InputError.exit_code, PlanError.exit_code)
    assert "rack c" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_plan_without_out_is_a_preview_that_writes_nothing(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_usecase, "load_solver", fake_solver(FILL_BROKER_4))
    snap = write_snapshot(tmp_path / "snap.json", UNBALANCED)
    before = sorted(tmp_path.iterdir())
    shown = invoke(["plan", "--snapshot", str(snap), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["format"] == "kafka-rebalance.plan-review"
    told = invoke(["plan", "--snapshot", str(snap)])
    assert "nothing was written. Give --out PLAN.json" in " ".join(told.output.split())
    assert sorted(tmp_path.iterdir()) == before
