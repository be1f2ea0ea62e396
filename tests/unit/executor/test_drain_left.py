"""After a drain completes, partitions its brokers still hold (topics made after the plan) are
told after the summary: taking the brokers out then would lose what only they hold."""

from __future__ import annotations

from executor.records import RunOutcome
from executor.runner import Executor
from kafka_rebalance.usecases.run import left_on_drained
from planner.goals import Budget, Goals
from planner.planfile import PlanFile, SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from tests.unit.executor.fakes import MB, make_world
from topology.model import Broker, Capacity, Partition, Topology

DRAIN = [Move("orders", 0, (1, 4), (1, 3), 20 * MB), Move("orders", 1, (2, 4), (2, 3), 20 * MB)]


def _plan_of_drain() -> PlanFile:
    cap = Capacity(10**12, 10**9, 10**9)
    topology = Topology(tuple(Broker(b, None, cap) for b in (1, 2, 3, 4)),
                        tuple(Partition(m.topic, m.partition, m.current, m.size_bytes)
                              for m in DRAIN))
    return make_plan_file(topology, DRAIN, Goals(remove_brokers=frozenset({4})), Budget(),
                          SolverInfo(SolverStatus.FEASIBLE, 0), "2026-01-01T00:00:00+00:00")


def test_a_topic_made_after_the_drains_plan_is_told_with_what_it_would_lose() -> None:
    world = make_world(DRAIN)
    world.admin.add("late", 0, (4,), MB)  # created during the drain, on the drained broker
    world.admin.add("late", 1, (4, 2), MB)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    assert report.outcome is RunOutcome.COMPLETED
    plan = _plan_of_drain()
    (warning,) = left_on_drained(world.ports(), plan, report)
    assert warning.startswith("broker(s) [4] still hold 2 partition(s) the plan did not move "
                              "(late-0, late-1: made after it, or left by it); 1 have every "
                              "replica there "
                              "(late-0) and would be lost: before taking the broker(s) out, "
                              "plan again with --remove-broker 4"), warning


def test_a_drain_that_emptied_its_broker_says_nothing_more() -> None:
    world = make_world(DRAIN)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    assert left_on_drained(world.ports(), _plan_of_drain(), report) == ()
