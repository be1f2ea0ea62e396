"""A refused `execute`: the error line comes first on stderr, the notes gathered before the
refusal (cluster changed, gate window, preflight warnings) follow it, and no journal is written.

The cluster is replaced by stand-ins at the run use case's edge (ports, live topology,
preflight), so what is tested is the command's order of output, not the executor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from executor import runner
from executor.clock import SystemClock
from kafka_rebalance.core.errors import ExecutionError
from kafka_rebalance.files.planfile import write_plan
from kafka_rebalance.usecases import run as run_usecase
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.model import Topology
from topology.snapshot import topology_from_dict

CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 10_000_000, "net_out_bytes_per_sec": 10_000_000}
CONN = ["--bootstrap", "127.0.0.1:1", "--prometheus", "http://127.0.0.1:1", "--max-mbps", "5",
        "--rate-window", "30s"]


def topology(replicas: list[int]) -> Topology:
    return topology_from_dict({
        "version": 1, "brokers": [{"id": i, "rack": None, "capacity": CAP} for i in (1, 2, 3)],
        "partitions": [{"topic": "t", "partition": 0, "replicas": replicas, "size_bytes": 10}]})


@pytest.fixture
def plan_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A one-move plan; the 'live' cluster has drifted from it (its fingerprint differs)."""
    plan = make_plan_file(topology([1, 2]), (Move("t", 0, (1, 2), (1, 3), 10),), Goals(),
                          Budget(), SolverInfo(SolverStatus.OPTIMAL, 10),
                          "2026-01-01T00:00:00+00:00")
    path = tmp_path / "plan.json"
    write_plan(path, plan)

    @contextmanager
    def no_cluster(*args: object) -> Iterator[Any]:
        yield SimpleNamespace(clock=SystemClock())  # ports (the run's clock) or a lease hold

    monkeypatch.setattr(run_usecase, "real_ports", no_cluster)
    monkeypatch.setattr(run_usecase, "cluster_lease", no_cluster)
    # (the fake's metrics answer the run's queries once it starts; test_network_series.py
    # covers the check of Prometheus before it)
    monkeypatch.setattr(run_usecase, "_require_network_series", lambda *args: None)
    monkeypatch.setattr(run_usecase, "live_topology",
                        lambda *args: topology([2, 1]))
    return path


def test_a_refused_dry_run_prints_the_error_first(plan_path: Path, rebalance_main: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen = runner.Preview(["t-0: [/]refused"], ["[bold]leftover throttle"], [])
    monkeypatch.setattr(runner, "preview", lambda *args, **kwargs: seen)
    result = rebalance_main("execute", str(plan_path), *CONN, "--dry-run")
    assert result.code == ExecutionError.exit_code
    assert result.err_lines == [
        "error: preflight would refuse the run:",
        "- t-0: [/]refused",
        "note: the cluster changed since the plan was made (fingerprint differs); preflight "
        "checks every move's partition",
        "note: [bold]leftover throttle"]


def test_a_refused_run_prints_the_error_first_and_writes_no_journal(
        plan_path: Path, rebalance_main: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise ExecutionError("preflight refused the run, nothing was changed:\n- t-0: [red]x")

    monkeypatch.setattr(runner.Executor, "start", refuse)
    before = plan_path.read_bytes()
    result = rebalance_main("execute", str(plan_path), *CONN)
    assert result.code == ExecutionError.exit_code
    assert result.err_lines[:2] == ["error: preflight refused the run, nothing was changed:",
                                    "- t-0: [red]x"]
    assert result.err_lines[2].startswith("note: the cluster changed since the plan was made")
    assert len(result.err_lines) == 3
    assert plan_path.read_bytes() == before
    assert sorted(p.name for p in plan_path.parent.iterdir()) == ["plan.json"]
    assert json.loads(before)["moves"]


def test_an_empty_plan_is_nothing_to_do_without_contacting_the_cluster(
        tmp_path: Path, rebalance_main: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = make_plan_file(topology([1, 2]), (), Goals(), Budget(),
                          SolverInfo(SolverStatus.OPTIMAL, 0), "2026-01-01T00:00:00+00:00")
    path = tmp_path / "plan.json"
    write_plan(path, plan)

    def no_contact(*args: object) -> None:
        raise AssertionError("the cluster was contacted for an empty plan")

    monkeypatch.setattr(run_usecase, "real_ports", no_contact)
    result = rebalance_main("execute", str(path), *CONN)
    assert result.code == 0, result.err_lines
    assert "nothing to do" in result.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no journal
