"""What an operator sees of `rebalance execute` through `cli.main`: one line per change on
stderr (no line per poll), a summary on stdout however the run ends, and the exit code that says
how (0 completed, 8 cancelled as asked, 6 stopped, 130 interrupted).

The cluster is the in-memory fake (copies at the throttled rate over fake time); only the ports are
swapped, at the run use case's edge (kafka_rebalance.usecases.run): the command, the use case, the
executor and the journal are the real ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from executor import runner
from executor.config import Event, EventKind, Reporter
from executor.journal import read_journal, request_cancel
from executor.records import RunOutcome
from kafka_rebalance.commands import execute_run
from kafka_rebalance.core.errors import ExecutionError
from kafka_rebalance.files.planfile import write_plan
from kafka_rebalance.usecases import run as run_usecase
from planner.goals import Budget, Goals
from planner.planfile import SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from tests.unit.executor.fakes import MB, World, make_world
from topology.model import Topology
from topology.snapshot import topology_from_dict

CAP = {"disk_bytes": 10**12, "net_in_bytes_per_sec": 10**9, "net_out_bytes_per_sec": 10**9}
# t-1 shares no broker end with t-0 (2 sends to 4, 1 sent to 3): it starts after t-0's gate
MOVES = (Move("t", 0, (1, 2), (1, 3), 10 * MB), Move("t", 1, (2, 1), (2, 4), 4 * MB))
FLAGS = ["--bootstrap", "127.0.0.1:1", "--prometheus", "http://127.0.0.1:1", "--max-mbps", "2",
         "--rate-window", "30s"]
TIME = re.compile(r"^\d\d:\d\d:\d\d ")
REAL_SERIES_CHECK = run_usecase._require_network_series

Hook = Callable[[World, Path, Event], None]


def topology() -> Topology:
    return topology_from_dict({
        "version": 1,
        "brokers": [{"id": i, "rack": None, "capacity": CAP} for i in (1, 2, 3, 4)],
        "partitions": [{"topic": m.topic, "partition": m.partition, "replicas": list(m.current),
                        "size_bytes": m.size_bytes} for m in MOVES]})


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Hook]]:
    """A plan file of MOVES at tmp_path/plan.json and the fake cluster behind `execute`; append
    hooks (world, journal path, event) to act during the run."""
    plan = make_plan_file(topology(), MOVES, Goals(), Budget(),
                          SolverInfo(SolverStatus.OPTIMAL, 10), "2026-01-01T00:00:00+00:00")
    write_plan(tmp_path / "plan.json", plan)
    world = make_world(list(MOVES))
    hooks: list[Hook] = []
    original = runner.Executor.start

    @contextmanager
    def fake_ports(*args: object) -> Iterator[Any]:
        yield world.ports()

    @contextmanager
    def no_lease(*args: object) -> Iterator[Any]:
        from executor.lease import LeaseHold

        yield LeaseHold()

    def start(plan: Any, ports: Any, config: Any, open_sink: Any, *, validator: Any = None,
              reporter: Reporter, run_id: str = "") -> runner.Executor:
        world.metrics.queries = config.queries  # answer the command's own queries
        journal = tmp_path / "plan.json.journal"

        def report(event: Event) -> None:
            reporter(event)
            for hook in hooks:
                hook(world, journal, event)
        return original(plan, world.ports(), config, open_sink, validator=validator,
                        reporter=report, run_id=run_id)

    monkeypatch.setattr(run_usecase, "real_ports", fake_ports)
    monkeypatch.setattr(run_usecase, "cluster_lease", no_lease)
    # (the fake's metrics answer the run's queries once it starts; test_network_series.py
    # covers the check of Prometheus before it)
    monkeypatch.setattr(run_usecase, "_require_network_series", lambda *args: None)
    monkeypatch.setattr(run_usecase, "live_topology", lambda *args: topology())
    monkeypatch.setattr(runner.Executor, "start", start)
    yield hooks


def table_rows(out: str) -> dict[str, list[str]]:
    """The summary table's rows by partition: their cells split on blanks."""
    cells = [line.split() for line in out.splitlines()]
    return {row[1]: row for row in cells if len(row) > 2 and row[0].isdigit()
            and row[1].startswith("t-")}


def untimed(err: str) -> list[str]:
    """stderr's lines without their time of day."""
    return [TIME.sub("", line) for line in err.splitlines() if line.strip()]


def test_a_completed_run_says_each_change_once_and_ends_with_a_summary(
        cluster: list[Hook], tmp_path: Path, rebalance_main: Any) -> None:
    result = rebalance_main("execute", str(tmp_path / "plan.json"), *FLAGS)
    assert result.code == 0, result.err
    lines = untimed(result.err)
    assert len(lines) == len(set(lines)), lines  # nothing said twice
    # the gate after t-0 is sampled every poll for the 11 s quota window: two lines, not 11
    gate = [line for line in lines if "gate after t-0" in line]
    assert len(gate) == 2, lines
    assert gate[0].startswith("[1/2] gate after t-0: wait (settled 1/3 consecutive samples")
    assert re.match(r"\[1/2\] gate after t-0: open after \d+s \(settled for 3 consecutive", gate[1])
    assert "[1/2] t-0: started (10.0 MB to copy, replicas [1, 2] -> [1, 3])" in lines
    assert "[1/2] t-0: throttle set (2.00 MB/s cap per broker), reassignment submitted; " \
           "copying 10.0 MB" in lines
    assert "[1/2] t-0: copied 10.0 MB in 5s (2.00 MB/s, 100% of the cap); checking replicas " \
           "and ISR" in lines
    assert [line for line in lines if "% copied" in line and "t-0" in line] == [
        "[1/2] t-0: 40% copied (4.00 MB of 10.0 MB, 2.00 MB/s, about 3s left)",
        "[1/2] t-0: 60% copied (6.00 MB of 10.0 MB, 2.00 MB/s, about 2s left)",
        "[1/2] t-0: 80% copied (8.00 MB of 10.0 MB, 2.00 MB/s, about 1s left)"]
    assert not any(re.search(r"\d{5,} B/s", line) for line in lines), lines  # no raw rates
    out = result.out.splitlines()
    assert re.match(r"run completed after \d+s: 2 of 2 move\(s\) done, 14.0 MB of 14.0 MB "
                    r"moved$", out[0]), out
    assert out[1] == "copying took 7s in all: mean 2.00 MB/s of the 2.00 MB/s cap (100%)"
    rows = table_rows(result.out)
    assert rows == {"t-0": ["1", "t-0", "10.0", "MB", "+0s", rows["t-0"][5], "5s", "2.00",
                            "MB/s", "(100%)", "done"],
                    "t-1": ["2", "t-1", "4.00", "MB", rows["t-1"][4], rows["t-1"][5], "2s",
                            "2.00", "MB/s", "(100%)", "done"]}


def test_a_cancel_asked_for_is_no_error_and_exits_8(
        cluster: list[Hook], tmp_path: Path, rebalance_main: Any) -> None:
    def cancel_mid_copy(world: World, journal: Path, event: Event) -> None:
        if event.kind is EventKind.PROGRESS and event.bytes_done >= 4 * MB:
            request_cancel(journal)  # as `rebalance cancel` from another terminal does
    cluster.append(cancel_mid_copy)
    result = rebalance_main("execute", str(tmp_path / "plan.json"), *FLAGS)
    assert result.code == execute_run.CANCELLED_EXIT_CODE == 8
    assert "error" not in result.err.lower()
    lines = untimed(result.err)
    assert "[1/2] t-0: cancelling (cancelled by the operator)" in lines
    assert "[1/2] t-0: cancelled (cancelled by the operator)" in lines
    out = result.out.splitlines()
    assert re.match(r"run cancelled after \d+s: 0 of 2 move\(s\) done, 0 B of 14.0 MB moved$",
                    out[0]), out
    assert out[1:3] == ["no copy has finished yet", "1 move(s) not started"]
    rows = table_rows(result.out)
    assert list(rows) == ["t-0"]  # t-1 never started
    # a copy cut short took its time but has no mean rate (its bytes never all arrived)
    assert rows["t-0"][:5] == ["1", "t-0", "10.0", "MB", "+0s"]
    assert rows["t-0"][-2:] == ["-", "cancelled"] and rows["t-0"][-3] != "-"
    assert read_journal(tmp_path / "plan.json.journal").outcome is RunOutcome.CANCELLED


def test_a_stopped_run_prints_the_summary_then_one_error(
        cluster: list[Hook], tmp_path: Path, rebalance_main: Any) -> None:
    def kill_target(world: World, journal: Path, event: Event) -> None:
        if event.kind is EventKind.PROGRESS and event.move == "t-1":
            world.admin.dead.add(4)
    cluster.append(kill_target)
    result = rebalance_main("execute", str(tmp_path / "plan.json"), *FLAGS)
    assert result.code == ExecutionError.exit_code
    err = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert err == ["error: run stopped: 1 of 2 move(s) done"]
    out = result.out.splitlines()
    assert re.match(r"run stopped after \d+s: 1 of 2 move\(s\) done, 10.0 MB of 14.0 MB moved$",
                    out[0]), out
    assert out[1] == "copying took 5s in all: mean 2.00 MB/s of the 2.00 MB/s cap (100%)"
    assert table_rows(result.out)["t-1"][-2:] == ["-", "failed"]
    assert any(line.startswith("[2/2] t-1: ") and "offline" in line
               for line in untimed(result.err))


def test_an_interrupted_run_prints_the_summary_so_far(
        cluster: list[Hook], tmp_path: Path, rebalance_main: Any) -> None:
    def ctrl_c(world: World, journal: Path, event: Event) -> None:
        if event.kind is EventKind.PROGRESS and event.bytes_done >= 4 * MB:
            raise KeyboardInterrupt
    cluster.append(ctrl_c)
    result = rebalance_main("execute", str(tmp_path / "plan.json"), *FLAGS)
    assert result.code == 130
    out = result.out.splitlines()
    assert re.match(r"run interrupted after \d+s: 0 of 2 move\(s\) done", out[0]), out
    assert table_rows(result.out)["t-0"][-1] == "copying"
    assert "rebalance resume" in result.err and "error" not in result.err.lower()


def test_a_run_that_completes_with_a_rate_left_on_an_offline_broker_is_no_success(
        cluster: list[Hook], tmp_path: Path, rebalance_main: Any) -> None:
    """t-1 keeps its replica on broker 2, which dies as the copy ends: every move is done,
    but 2's rate waits for `clear-throttles` once it is back. That is told, and the exit is 6,
    not 0 (a script that trusts exit 0 would leave the throttle)."""
    from topology.model import TopicPartition

    def kill_kept_broker(world: World, journal: Path, event: Event) -> None:
        if event.kind is EventKind.STATE and event.message == "t-1: verifying" \
                and 2 not in world.admin.dead:
            world.admin.dead.add(2)
            part = world.admin.parts[TopicPartition("t", 1)]
            part.isr, part.leader = (4,), 4
    cluster.append(kill_kept_broker)
    result = rebalance_main("execute", str(tmp_path / "plan.json"), *FLAGS)
    assert result.code == 6, result.err
    assert re.match(r"run completed after \d+s: 2 of 2 move\(s\) done", result.out), result.out
    assert "throttles may be left by t-1: run `rebalance clear-throttles`" in result.err
    status = rebalance_main("status", str(tmp_path / "plan.json"))
    assert "clear-throttles" in status.out, status.out


def test_a_run_whose_reader_goes_at_once_still_runs_to_its_end_and_exit_code(
        cluster: list[Hook], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`execute ... 2>&1 | head -c0`: the reader is gone before the first line. The run still
    moves every partition and exits 0 (it had stopped before its first move with exit 1,
    rich's own answer to a broken pipe), and its journal tells the whole run."""
    import os
    import sys

    import cli

    reading, writing = os.pipe()
    os.close(reading)  # the reader is gone
    closed = os.fdopen(writing, "w", buffering=1)
    monkeypatch.setattr(sys, "argv", ["rebalance", "execute", str(tmp_path / "plan.json"),
                                      *FLAGS])
    monkeypatch.setattr(sys, "stdout", closed)
    monkeypatch.setattr(sys, "stderr", closed)
    try:
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
    finally:
        monkeypatch.undo()
        closed.close()
    assert exit_info.value.code in (0, None)
    run = read_journal(tmp_path / "plan.json.journal")
    assert run.outcome is RunOutcome.COMPLETED


def test_a_resume_with_a_prometheus_of_another_cluster_is_refused_at_once(
        cluster: list[Hook], tmp_path: Path, rebalance_main: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As `execute` is: exit 4 before anything changes, not a hold for ever ("metrics
    unavailable ... will retry") on a URL that will never answer for this cluster."""
    worlds: list[World] = []

    def ctrl_c(world: World, journal: Path, event: Event) -> None:
        worlds.append(world)
        if event.kind is EventKind.PROGRESS and event.bytes_done >= 4 * MB:
            raise KeyboardInterrupt
    cluster.append(ctrl_c)
    assert rebalance_main("execute", str(tmp_path / "plan.json"), *FLAGS).code == 130
    cluster.clear()
    monkeypatch.setattr(run_usecase, "_require_network_series", REAL_SERIES_CHECK)
    worlds[0].metrics.unscraped = {1, 2, 3, 4}  # series for none of this cluster's brokers
    before = read_journal(tmp_path / "plan.json.journal").records
    result = rebalance_main("resume", str(tmp_path / "plan.json"), *FLAGS[:4])
    assert result.code == 4, result.err
    assert "no network series for any broker of the plan" in result.err
    assert read_journal(tmp_path / "plan.json.journal").records == before
