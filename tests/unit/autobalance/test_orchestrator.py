"""One auto cycle against the executor's in-memory cluster: a new run is planned within the
window's byte budget and executed; a run stopped at the window's end is resumed in the next
window; a run made stale by the cluster is cancelled and planned afresh; outside the windows
nothing is touched."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from executor.config import Event, EventKind
from executor.journal import read_journal
from executor.records import RunOutcome
from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from kafka_rebalance.autobalance.cycle import Action, Pace
from kafka_rebalance.autobalance.orchestrator import AutoSettings, CycleResult, Edge, run_cycle
from kafka_rebalance.autobalance.statedir import StateDir
from kafka_rebalance.autobalance.windows import parse_schedule
from kafka_rebalance.core.errors import ExecutionError
from planner.goals import Budget, Goals
from planner.planfile import PlanFile, SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from tests.unit.executor.fakes import MB, World, make_world, standard_moves
from topology.model import Broker, Capacity, Partition, Topology

UTC_ZONE = ZoneInfo("UTC")
CAP = Capacity(1e12, 1e9, 1e9)
MONDAY_1344 = datetime(1970, 1, 12, 13, 44, tzinfo=UTC).timestamp()


def topology_of(world: World) -> Topology:
    """The fake cluster as the planner sees it (no traffic; broker 4 holds nothing)."""
    brokers = tuple(Broker(b, None, CAP) for b in world.admin.broker_ids)
    parts = tuple(Partition(tp.topic, tp.partition, p.replicas, p.size, 0.0, 0.0)
                  for tp, p in sorted(world.admin.parts.items(),
                                      key=lambda kv: (kv[0].topic, kv[0].partition)))
    return Topology(brokers, parts)


@dataclass
class StubPlanner:
    """Plans the moves it is given (those that still apply), recording each budget."""

    moves: list[Move]
    budgets: list[Budget] = field(default_factory=list)

    def __call__(self, topology: Topology, goals: Goals, budget: Budget) -> PlanFile:
        self.budgets.append(budget)
        current = {(p.topic, p.partition): p.replicas for p in topology.partitions}
        moves = [m for m in self.moves if current[(m.topic, m.partition)] == m.current]
        return make_plan_file(topology, moves, goals, budget,
                              SolverInfo(SolverStatus.FEASIBLE, 0), "1970-01-12T13:44:00+00:00")


def setup(tmp_path: Path, window: str, at: float) -> tuple[World, AutoSettings, Edge,
                                                           StubPlanner, list[str]]:
    world = make_world()
    world.clock.t = at
    said: list[str] = []
    planner = StubPlanner(standard_moves())
    settings = AutoSettings(parse_schedule([window], UTC_ZONE),
                            Pace(world.config.max_bytes_per_sec, 0.5, min_window_seconds=0),
                            Goals(tolerance=0.10), world.config)
    edge = Edge(world.ports(), lambda: topology_of(world), planner, StateDir(tmp_path),
                said.append, world.reporter)
    return world, settings, edge, planner, said


def no_throttles(world: World) -> bool:
    brokers, topics = world.admin.configs()
    return not any(brokers.values()) and not any(topics.values())


def test_a_due_cluster_is_planned_within_budget_and_executed(tmp_path: Path) -> None:
    world, settings, edge, planner, said = setup(tmp_path, "daily 13:00-15:00", MONDAY_1344)
    result = run_cycle(settings, edge)
    assert result.decision.action is Action.REBALANCE
    # 76 minutes left at 10 MB/s, half of it copying
    assert planner.budgets[0].max_bytes == 76 * 60 * 10 * MB // 2
    assert result.plan_path is not None and result.plan_path.exists()
    assert result.journal_path is not None
    assert read_journal(result.journal_path).outcome is RunOutcome.COMPLETED
    assert world.admin.replicas() == {"orders-0": (3, 2), "orders-1": (2, 4),
                                      "events-0": (1, 4), "other-0": (1, 2, 3)}
    assert no_throttles(world) and not result.failed
    assert any("rebalance due" in line and "broker 4" in line for line in said)


def test_a_run_stopped_at_the_window_end_is_resumed_in_the_next_window(tmp_path: Path) -> None:
    # 13:46:55, the window ends at 13:47: the 3 s move fits, the next ones do not
    world, settings, edge, planner, _ = setup(tmp_path, "daily 13:00-13:47",
                                              MONDAY_1344 + 175)
    first = run_cycle(settings, edge)
    assert first.report is not None and first.report.outcome is RunOutcome.STOPPED
    assert first.report.states["orders-0"] is MoveState.DONE
    assert first.report.states["events-0"] is MoveState.PENDING
    assert world.admin.replicas()["events-0"] == (3, 1)
    assert no_throttles(world) and not first.failed

    world.clock.t = MONDAY_1344 + 3600  # 14:44: outside; the run waits
    waiting = run_cycle(settings, edge)
    assert waiting.decision.action is Action.SLEEP
    assert waiting.decision.wake_at == datetime(1970, 1, 13, 13, 0, tzinfo=UTC)

    world.clock.t = datetime(1970, 1, 13, 13, 0, tzinfo=UTC).timestamp()
    resumed = run_cycle(settings, edge)
    assert resumed.decision.action is Action.RESUME
    assert resumed.report is not None and resumed.report.outcome is RunOutcome.COMPLETED
    assert resumed.journal_path == first.journal_path
    assert world.admin.replicas()["events-0"] == (1, 4)
    assert len(planner.budgets) == 1  # no second plan
    assert no_throttles(world)


def test_a_stale_unfinished_run_is_cancelled_and_planned_afresh(tmp_path: Path) -> None:
    world, settings, edge, planner, said = setup(tmp_path, "daily 13:00-13:47",
                                                 MONDAY_1344 + 175)
    first = run_cycle(settings, edge)
    assert first.report is not None and first.report.states["events-0"] is MoveState.PENDING
    world.admin.add("events", 0, (3, 2), 10 * MB)  # someone moved it meanwhile
    planner.moves = [Move("events", 0, (3, 2), (4, 2), 10 * MB)]

    world.clock.t = datetime(1970, 1, 13, 13, 0, tzinfo=UTC).timestamp()
    again: CycleResult = run_cycle(settings, edge)
    assert first.journal_path is not None
    assert read_journal(first.journal_path).outcome is RunOutcome.CANCELLED
    assert any("cluster changed" in line for line in said)
    assert again.decision.action is Action.REBALANCE
    assert again.plan_path is not None and again.plan_path != first.plan_path
    assert again.report is not None and again.report.outcome is RunOutcome.COMPLETED
    assert world.admin.replicas()["events-0"] == (4, 2)
    assert world.admin.replicas()["orders-1"] == (2, 3)  # the cancelled run's move stays undone
    assert no_throttles(world)


def test_outside_the_windows_nothing_is_read_or_changed(tmp_path: Path) -> None:
    world, settings, edge, planner, _ = setup(tmp_path, "daily 01:00-02:00", MONDAY_1344)
    before = world.admin.replicas()
    calls = len(world.admin.calls)
    result = run_cycle(settings, edge)
    assert result.decision.action is Action.SLEEP
    assert world.admin.replicas() == before and len(world.admin.calls) == calls
    assert not planner.budgets and not list(tmp_path.iterdir())


def test_dry_run_plans_but_writes_and_changes_nothing(tmp_path: Path) -> None:
    world, settings, edge, planner, said = setup(tmp_path, "daily 13:00-15:00", MONDAY_1344)
    before = world.admin.replicas()
    dry = AutoSettings(settings.schedule, settings.pace, settings.goals, settings.executor,
                       dry_run=True)
    result = run_cycle(dry, edge)
    assert result.decision.action is Action.REBALANCE and result.report is None
    assert len(planner.budgets) == 1
    assert world.admin.replicas() == before and not list(tmp_path.iterdir())
    assert any(line.startswith("dry run: would execute") for line in said)


def test_a_plan_not_worth_its_bytes_is_skipped_and_nothing_moves(tmp_path: Path) -> None:
    # the stub plan takes disk from 100% to 63% off the average (broker 4 from 0 to 0.89x):
    # 37 points, below a 50-point threshold, above a 30-point one
    world, settings, edge, planner, said = setup(tmp_path, "daily 13:00-15:00", MONDAY_1344)
    before = world.admin.replicas()
    calls = len(world.admin.calls)
    result = run_cycle(replace(settings, min_improvement=0.5), edge)
    assert result.decision.action is Action.REBALANCE and len(planner.budgets) == 1
    assert result.report is None and result.plan_path is None and not result.failed
    assert "disk: worst broker 100.0% -> 63.0% from its target" in result.skipped
    assert any(line.startswith("nothing worth doing: ") and "50.0 points" in line
               for line in said)
    assert world.admin.replicas() == before and not list(tmp_path.iterdir())
    assert not [c for c in world.admin.calls[calls:] if c[0].startswith("alter")]

    ran = run_cycle(replace(settings, min_improvement=0.3), edge)
    assert ran.report is not None and ran.report.outcome is RunOutcome.COMPLETED
    assert not ran.skipped and world.admin.replicas() != before


def test_a_plan_that_fixes_a_rack_violation_runs_whatever_its_balance_gain(
        tmp_path: Path) -> None:
    world, settings, edge, planner, said = setup(tmp_path, "daily 13:00-15:00", MONDAY_1344)
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}  # orders-0 on (1, 2): both replicas in rack a

    def with_racks() -> Topology:
        plain = topology_of(world)
        return Topology(tuple(Broker(b.id, racks[b.id], b.capacity) for b in plain.brokers),
                        plain.partitions)

    strict = replace(settings, min_improvement=0.9)  # no balance gain is this big
    result = run_cycle(strict, replace(edge, read_topology=with_racks))
    assert result.report is not None and result.report.outcome is RunOutcome.COMPLETED
    assert any(line.startswith("worth running: fixes 1 of 1 hard-goal violation")
               for line in said)
    assert world.admin.replicas()["orders-0"] == (3, 2)

    planner.moves = [Move("orders", 1, (2, 4), (4, 2), 20 * MB)]  # leaders only: no fix
    again = run_cycle(strict, replace(edge, read_topology=with_racks))
    assert again.report is None and "no hard-goal violation" in again.skipped


def test_a_resumed_run_uses_this_process_cap_and_its_own_cooldown(tmp_path: Path) -> None:
    """Like `rebalance resume --max-mbps`: the cap is this process's, every other setting the
    run's own (a longer --cooldown given to a restarted auto applies to its new runs only)."""
    world, settings, edge, _, said = setup(tmp_path, "daily 13:00-13:47", MONDAY_1344 + 175)
    first = run_cycle(settings, edge)
    assert first.report is not None and first.report.outcome is RunOutcome.STOPPED
    assert first.journal_path is not None

    rates: dict[str, set[str]] = {}

    def read_rates(w: World, event: Event) -> None:
        if event.kind is EventKind.STATE and event.state == MoveState.COPYING.value:
            rates[event.move] = {cfg[k] for cfg in w.admin.broker_cfg.values()
                                 for k in (LEADER_RATE, FOLLOWER_RATE) if k in cfg}

    world.hooks.append(read_rates)
    slower = replace(settings, executor=replace(settings.executor, max_bytes_per_sec=5 * MB,
                                                cooldown_seconds=2.0))
    world.clock.t = datetime(1970, 1, 13, 13, 0, tzinfo=UTC).timestamp()
    resumed = run_cycle(slower, edge)
    assert resumed.report is not None and resumed.report.outcome is RunOutcome.COMPLETED
    assert rates == {"orders-1": {str(5 * MB)}, "events-0": {str(5 * MB)}}
    line = next(s for s in said if s.startswith("resuming "))
    assert line == (f"resuming {first.journal_path.name} with "
                    "the run's own settings except cap 5 MB/s (the run started with 10 MB/s); "
                    "a move left in flight keeps its journaled throttle until it is done")
    assert no_throttles(world)


def test_a_dead_broker_is_drained_after_its_grace_period(tmp_path: Path) -> None:
    """Broker 3 holds replicas and goes offline: inside the grace period the cycle waits (a
    restart would make the drain wasted copies); past it the drain is planned and executed;
    with every replica of a partition offline, nothing is planned and the cycle says why."""
    world, settings, edge, planner, _ = setup(tmp_path, "daily 13:00-15:00", MONDAY_1344)
    settings = replace(settings, dead_broker_grace_seconds=300.0)
    drain = [Move("orders", 1, (2, 3), (2, 4), 20 * MB), Move("events", 0, (3, 1), (4, 1),
                                                              10 * MB)]
    planner.moves = drain

    def topology_dead() -> Topology:
        live = topology_of(world)
        return Topology(tuple(replace(b, alive=b.id != 3) for b in live.brokers),
                        live.partitions)
    edge = replace(edge, read_topology=topology_dead)
    world.admin.dead.add(3)
    first = run_cycle(settings, edge)
    assert first.decision.action is Action.BALANCED and not planner.budgets
    assert "waiting: offline: broker 3 for 0 s" in first.decision.reason
    world.clock.t += 200
    assert "broker 3 for 200 s" in run_cycle(settings, edge).decision.reason
    world.clock.t += 101
    drained = run_cycle(settings, edge)
    assert drained.decision.action is Action.REBALANCE, drained.decision.reason
    assert drained.report is not None and drained.report.outcome is RunOutcome.COMPLETED
    assert world.admin.replicas()["orders-1"] == (2, 4)
    assert world.admin.replicas()["events-0"] == (4, 1)

    world.admin.dead.update({1, 2})  # other-0 is on 1, 2 and 3: nothing left to copy from
    tmp_state = StateDir(tmp_path / "second")
    lost_edge = replace(edge, state=tmp_state, read_topology=lambda: Topology(
        tuple(replace(b, alive=b.id == 4) for b in topology_of(world).brokers),
        topology_of(world).partitions))
    try:
        run_cycle(settings, lost_edge)
    except ExecutionError as exc:
        assert "other-0" in str(exc) and "no replica on a live broker" in str(exc)
    else:
        raise AssertionError("a cluster that lost partitions was planned for")


def test_a_cluster_another_run_holds_gets_no_plan(tmp_path: Path) -> None:
    """The lease is taken before planning: a cluster held by another run is refused before
    the planner runs on its moves in flight, and no plan file is left in the state dir."""
    from collections.abc import Iterator
    from contextlib import contextmanager

    from executor.lease import LeaseHold

    @contextmanager
    def held_elsewhere(run_id: str, journal: Path) -> Iterator[LeaseHold]:
        raise ExecutionError("another run holds this cluster: run abc, alive 3 s ago")
        yield LeaseHold()  # (never reached: a generator for contextmanager)

    _, settings, edge, planner, _ = setup(tmp_path, "daily 13:00-15:00", MONDAY_1344)
    edge = replace(edge, lease=held_elsewhere)
    with pytest.raises(ExecutionError, match="another run holds this cluster"):
        run_cycle(settings, edge)
    assert planner.budgets == []
    assert not list(tmp_path.glob("plan-*.json"))
