"""Draining a dead broker: its partitions are under-replicated because of it, and it answers
nothing. The run is not refused for that under-replication (the run heals it), sets and reads
no config on the dead broker, completes the moves whose only missing replica is the one
leaving, and the gate is not held by partitions that only an offline broker keeps
under-replicated."""

from __future__ import annotations

import pytest

from executor.config import AUTO, EventKind
from executor.records import RunOutcome
from executor.runner import Executor
from kafka_rebalance.core.errors import ExecutionError
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world
from topology.model import TopicPartition

DEAD = 4
DRAIN = [Move("orders", 0, (1, DEAD), (1, 3), 20 * MB),
         Move("orders", 1, (2, DEAD), (2, 3), 20 * MB)]


def _dead_world(elsewhere: bool = False, **config: object) -> World:
    world = make_world(DRAIN, **config)
    if elsewhere:
        world.admin.add("elsewhere", 0, (2, DEAD), 5 * MB)  # not in the plan
    world.admin.dead.add(DEAD)
    return world


def _touches_dead(world: World) -> list[str]:
    names = ("broker_configs", "alter_broker_configs", "log_dir_sizes")
    return [name for name, args in world.admin.calls
            if name in names and isinstance(args, (list, dict)) and DEAD in args]


@pytest.mark.parametrize("concurrency", [1, AUTO])
def test_a_dead_broker_is_drained_without_touching_it(concurrency: int | str) -> None:
    world = _dead_world(concurrency=concurrency)
    before = world.admin.configs()
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.COMPLETED, world.messages(EventKind.NOTE)
    assert [world.admin.parts[m.key].replicas for m in DRAIN] == [(1, 3), (2, 3)]
    assert _touches_dead(world) == []
    assert world.admin.configs() == before  # every throttle it set is gone


def test_a_dead_brokers_partitions_outside_the_plan_do_not_hold_the_gate() -> None:
    """With --allow-under-replicated, a partition only the offline broker keeps
    under-replicated (not in the plan) is a fault no wait cures: the gate opens."""
    world = _dead_world(elsewhere=True, allow_under_replicated=True, cooldown_seconds=2.0,
                        final_gate=True)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.COMPLETED, world.messages(EventKind.GATE)
    assert not any("under-replicated" in m for m in world.messages(EventKind.GATE))


def test_offline_replicas_are_told_and_a_live_follower_behind_still_refuses_the_run() -> None:
    world = _dead_world(elsewhere=True)
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter)
    told = [m for m in world.messages(EventKind.NOTE) if "offline" in m]
    assert told == ["3 partition(s) are under-replicated because broker(s) [4] are offline "
                    "(elsewhere-0, orders-0, orders-1); 3 are down to one in-sync replica or "
                    "none (elsewhere-0, orders-0, orders-1): one more failure loses their data. "
                    "The plan heals 2 of them; the run moves those first, the fewest in-sync "
                    "replicas first"], world.messages(EventKind.NOTE)
    behind = _dead_world()
    behind.admin.parts[TopicPartition("other", 0)].isr = (1, 2)  # 3 is alive, behind
    with pytest.raises(ExecutionError, match=r"1 partition\(s\) are under-replicated \(other-0\)"):
        Executor.start(behind.plan, behind.ports(), behind.config, behind.open_sink,
                       reporter=behind.reporter)


@pytest.mark.parametrize("concurrency", [1, AUTO])
def test_the_most_exposed_partitions_are_healed_first_whatever_the_plan_order(
        concurrency: int | str) -> None:
    """Broker 4 died after the plan was made: the move of the partition down to one in-sync
    replica starts first, then the one down to two, then the rest in the plan's order."""
    plan = [Move("healthy", 0, (1, 2), (1, 3), 20 * MB),
            Move("rf3", 0, (1, 2, DEAD), (1, 2, 3), 5 * MB),
            Move("rf2", 0, (2, DEAD), (2, 3), 5 * MB)]
    world = make_world(plan, concurrency=concurrency)
    world.admin.dead.add(DEAD)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.COMPLETED, world.messages(EventKind.NOTE)
    started = [next(iter(targets)).topic for name, targets in world.admin.calls
               if name == "alter_partition_reassignments"
               and any(t is not None for t in targets.values())]  # type: ignore[attr-defined]
    assert started[:2] == ["rf2", "rf3"], started


def test_a_move_of_a_partition_with_no_live_replica_is_refused_before_anything_changes() -> None:
    """A plan made while broker 5 was alive moves solo-0 off it; 5 then died holding its only
    replica: no leader can feed the copy, so the run is refused (a new plan leaves it)."""
    solo = Move("solo", 0, (5,), (3,), 5 * MB)
    world = make_world([*DRAIN, solo])
    world.admin.dead.update({DEAD, 5})
    before = world.admin.configs()
    with pytest.raises(ExecutionError, match=r"1 move\(s\) are of partitions with no live "
                                             r"replica \(solo-0\)"):
        Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                       reporter=world.reporter)
    assert world.admin.configs() == before and world.sink.records == []


def test_a_broker_that_dies_after_its_copy_does_not_hold_the_gate() -> None:
    """orders-0 sends from broker 1, which dies as the copy ends: the gate after the move
    watches the live ends only (a dead broker's series never comes back), so the next move
    starts, not a hold until --gate-timeout stops the run (seen on the sandbox: 5 minutes of
    'no network metrics for broker(s) [3]')."""
    from executor.config import Event

    world = make_world(cooldown_seconds=1.0, gate_timeout_seconds=60.0)

    def kill(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.message == "orders-0: verifying":
            w.admin.dead.add(1)
            w.hooks.remove(kill)
    world.hooks.append(kill)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.states["orders-0"].value == "done", report.reasons
    assert not any("no network metrics for broker(s) [1]" in m
                   for m in world.messages(EventKind.GATE)), world.messages(EventKind.GATE)
    assert report.states["orders-1"].value == "done", report.stop_reason
