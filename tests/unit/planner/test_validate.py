"""The validator detects each hard violation on small hand-built clusters."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.plan import ExecutionPlan
from executor.preflight import planner_validator
from kafka_rebalance.core.errors import PlanError
from planner.goals import Goals
from planner.result import Move
from planner.validate import validate_plan
from topology.load import balance
from topology.model import (
    RESOURCES,
    Broker,
    Capacity,
    Partition,
    Resource,
    TopicPartition,
    Topology,
    replace_replicas,
)

CAP = Capacity(1000, 1000, 1000)


def cluster(racks: tuple[str | None, ...] = ("a", "a", "b", "b"),
            extra: tuple[Broker, ...] = ()) -> Topology:
    """Four brokers, two racks, four RF-2 partitions: perfectly balanced."""
    brokers = tuple(Broker(i + 1, rack, CAP) for i, rack in enumerate(racks)) + extra
    parts = tuple(Partition("t", i, reps, 100, 10.0, 10.0)
                  for i, reps in enumerate([(1, 3), (2, 4), (3, 1), (4, 2)]))
    return Topology(brokers, parts)


def tp(i: int) -> TopicPartition:
    return TopicPartition("t", i)


def swap_moves() -> list[Move]:
    """Two moves that keep every resource perfectly balanced."""
    return [Move("t", 0, (1, 3), (2, 3), 100), Move("t", 1, (2, 4), (1, 4), 100)]


def test_balanced_swap_is_valid_and_counts_bytes() -> None:
    report = validate_plan(cluster(), swap_moves(), Goals())
    assert report.errors == ()
    assert report.valid and report.balanced
    assert (report.moves, report.bytes_moved) == (2, 200)
    report.raise_if_invalid()


def test_three_forms_of_after_agree() -> None:
    before = cluster()
    after = replace_replicas(before, {tp(0): (2, 3), tp(1): (1, 4)})
    by_topology = validate_plan(before, after, Goals())
    by_mapping = validate_plan(before, {tp(0): [2, 3], tp(1): [1, 4]}, Goals())
    by_moves = validate_plan(before, swap_moves(), Goals())
    assert by_topology == by_mapping == by_moves


def test_replication_factor_change_is_an_error() -> None:
    report = validate_plan(cluster(), {tp(0): [1, 3, 2]}, Goals())
    assert any("t-0" in e and "replication factor" in e for e in report.errors)
    with pytest.raises(PlanError, match="replication factor"):
        report.raise_if_invalid()


def test_repeated_replica_is_an_error() -> None:
    report = validate_plan(cluster(), {tp(0): [1, 1]}, Goals())
    assert any("t-0" in e and "repeat" in e for e in report.errors)
    assert report.resources == ()


def test_unknown_broker_is_an_error() -> None:
    report = validate_plan(cluster(), {tp(0): [1, 9]}, Goals())
    assert any("unknown broker 9" in e for e in report.errors)


def test_offline_broker_is_an_error() -> None:
    before = cluster(extra=(Broker(5, "b", CAP, alive=False),))
    report = validate_plan(before, {tp(0): [1, 5]}, Goals())
    assert any("t-0" in e and "offline broker 5" in e for e in report.errors)


def test_a_partition_with_no_live_replica_may_stay_but_not_move() -> None:
    """t-9 lives only on offline broker 5: left alone it is a warning (nothing can copy it),
    moved it is an error (its reassignment could never complete)."""
    before = cluster(extra=(Broker(5, "b", CAP, alive=False),))
    before = replace(before, partitions=(*before.partitions,
                                         Partition("t", 9, (5,), 100, 10.0, 10.0)))
    left = validate_plan(before, (), Goals())
    assert left.errors == ()
    assert [w for w in left.warnings if "no live replica (t-9)" in w]
    moved = validate_plan(before, {tp(9): [2]}, Goals())
    assert any(e.startswith("partition t-9: no live replica to copy from") for e in moved.errors)


def test_rack_rule_names_partition_and_rack() -> None:
    report = validate_plan(cluster(), {tp(0): [1, 2], tp(1): [3, 4]}, Goals())
    assert any("t-0" in e and "rack a" in e for e in report.errors)
    assert any("t-1" in e and "rack b" in e for e in report.errors)


def test_rack_rule_skipped_without_racks_or_when_disabled() -> None:
    plan = {tp(0): [1, 2], tp(1): [3, 4]}
    assert not any("rack" in e for e in validate_plan(cluster((None,) * 4), plan,
                                                      Goals()).errors)
    assert not any("rack" in e for e in validate_plan(cluster(), plan,
                                                      Goals(rack_aware=False)).errors)


def test_rf_three_on_two_racks_allows_two_per_rack() -> None:
    before = cluster().with_partitions([Partition("x", 0, (1, 3, 4), 10)])
    ok = validate_plan(before, {TopicPartition("x", 0): [1, 2, 3]}, Goals())
    assert not any("rack" in e for e in ok.errors)


def test_capacity_above_max_utilization_names_broker() -> None:
    report = validate_plan(cluster(), swap_moves(), Goals(max_utilization=0.15))
    assert any(e.startswith("broker 1: disk utilization 20.0%") for e in report.errors)


def test_removed_broker_must_end_empty() -> None:
    report = validate_plan(cluster(), swap_moves(), Goals(remove_brokers=frozenset({4})))
    assert any("stays on removed broker 4" in e for e in report.errors)


def test_draining_a_broker_may_worsen_balance_with_a_warning() -> None:
    moves = [Move("t", 1, (2, 4), (2, 3), 100), Move("t", 3, (4, 2), (3, 2), 100)]
    report = validate_plan(cluster(), moves, Goals(remove_brokers=frozenset({4})))
    assert report.errors == ()
    assert any("forced by draining removed or offline brokers" in w for w in report.warnings)


def test_unknown_added_or_removed_broker_is_an_error() -> None:
    report = validate_plan(cluster(), [], Goals(add_brokers=frozenset({42})))
    assert any("broker 42 to be added" in e for e in report.errors)
    report = validate_plan(cluster(), [], Goals(remove_brokers=frozenset({7})))
    assert any("broker 7 to be removed" in e for e in report.errors)


def test_stale_and_duplicate_moves_are_errors() -> None:
    stale = [Move("t", 0, (1, 2), (2, 3), 100)]
    assert any("stale" in e for e in validate_plan(cluster(), stale, Goals()).errors)
    twice = [*swap_moves(), Move("t", 0, (1, 3), (4, 3), 100)]
    assert any("more than once" in e for e in validate_plan(cluster(), twice, Goals()).errors)


def test_unknown_partition_is_an_error() -> None:
    report = validate_plan(cluster(), [Move("nope", 0, (1, 3), (2, 3), 1)], Goals())
    assert any("nope-0 is not in the cluster" in e for e in report.errors)


def test_planned_topology_may_change_only_replica_lists() -> None:
    before = cluster()
    missing = before.with_partitions(before.partitions[1:])
    assert any("t-0 is missing" in e for e in validate_plan(before, missing, Goals()).errors)
    rebuilt = before.with_brokers([Broker(b.id, "z", b.capacity) for b in before.brokers])
    assert any("changes the brokers" in e for e in validate_plan(before, rebuilt,
                                                                 Goals()).errors)


def test_worse_balance_is_an_error() -> None:
    report = validate_plan(cluster(), {tp(0): [2, 3]}, Goals())
    assert any(e.startswith("disk balance gets worse") for e in report.errors)
    disk = report.resource(Resource.DISK)
    assert disk.within_tolerance_before and not disk.within_tolerance_after
    assert disk.max_over_avg_after == pytest.approx(1.5)
    assert disk.min_over_avg_after == pytest.approx(0.5)


def test_worse_balance_can_be_only_a_warning_for_moves_made_for_another_reason() -> None:
    report = validate_plan(cluster(), {tp(0): [2, 3]}, Goals(), worse_balance_is_error=False)
    assert report.errors == ()
    assert any(w.startswith("disk balance gets worse") for w in report.warnings)
    rack_broken = validate_plan(cluster(), {tp(0): [1, 1]}, Goals(), worse_balance_is_error=False)
    assert rack_broken.errors  # the hard rules still refuse


def test_filling_a_new_broker_improves_balance() -> None:
    before = cluster(extra=(Broker(5, "b", CAP),))
    report = validate_plan(before, [Move("t", 0, (1, 3), (1, 5), 100)], Goals(
        tolerance=0.5, add_brokers=frozenset({5})))
    disk = report.resource(Resource.DISK)
    assert disk.min_over_avg_before == 0.0
    assert disk.min_over_avg_after == pytest.approx(100 / 160)
    assert report.errors == ()


def test_unbalanced_but_improved_is_a_warning() -> None:
    before = cluster(extra=(Broker(5, "b", CAP),))
    report = validate_plan(before, [Move("t", 0, (1, 3), (1, 5), 100)], Goals())
    assert report.errors == ()
    assert not report.balanced
    assert any("not within +/-10%" in w for w in report.warnings)


def test_unchanged_partitions_on_bad_brokers_or_crowded_racks_are_errors() -> None:
    before = cluster().with_partitions([
        Partition("t", 0, (1, 3), 100), Partition("t", 1, (1, 2), 100),
        Partition("t", 2, (4, 1), 100)])
    offline = before.with_brokers([Broker(b.id, b.rack, CAP, alive=b.id != 4)
                                   for b in before.brokers])
    report = validate_plan(offline, [], Goals(tolerance=0.9))
    assert any("t-1: rack a holds 2" in e for e in report.errors)
    assert any("t-2: replica on offline broker 4" in e for e in report.errors)
    assert not any("t-0" in e for e in report.errors)
    moved = validate_plan(offline, [Move("t", 1, (1, 2), (1, 4), 100)], Goals(tolerance=0.9))
    assert any("t-1: replica on offline broker 4" in e for e in moved.errors)
    assert not any("rack" in e for e in moved.errors)


@st.composite
def cluster_and_plan(draw: st.DrawFn) -> tuple[Topology, dict[TopicPartition, list[int]]]:
    count = draw(st.integers(2, 6))
    racks = draw(st.sampled_from([None, ("a", "b"), ("a", "b", "c")]))
    brokers = tuple(Broker(i + 1, None if racks is None else racks[i % len(racks)],
                           Capacity(draw(st.integers(500, 2000)), 1000, 1000))
                    for i in range(count))
    parts, plan = [], {}
    for index in range(draw(st.integers(1, 12))):
        rf = draw(st.integers(1, min(3, count)))
        replicas = tuple(draw(st.permutations(range(1, count + 1)))[:rf])
        parts.append(Partition("t", index, replicas, draw(st.integers(0, 100)),
                               draw(st.floats(0, 10)), draw(st.floats(0, 10))))
        if draw(st.booleans()):
            plan[TopicPartition("t", index)] = list(draw(st.permutations(range(1, count + 1)))[:rf])
    return Topology(brokers, tuple(parts)), plan


@settings(max_examples=80, deadline=None)
@given(cluster_and_plan())
def test_report_agrees_with_a_recount_of_the_planned_cluster(
        drawn: tuple[Topology, dict[TopicPartition, list[int]]]) -> None:
    before, plan = drawn
    goals = Goals(tolerance=0.5, max_utilization=1.0)
    report = validate_plan(before, plan, goals)
    after = replace_replicas(before, {k: tuple(v) for k, v in plan.items()})
    changed = [p for p in before.partitions if after.partition_map()[p.key].replicas != p.replicas]
    assert report.moves == len(changed)
    assert report.bytes_moved == sum(
        p.size_bytes * len(set(after.partition_map()[p.key].replicas) - set(p.replicas))
        for p in changed)
    expected = balance(after)
    for res in RESOURCES:
        got = report.resource(res)
        assert got.max_over_avg_after == pytest.approx(expected[res].max_over_avg, abs=1e-9)
        assert got.min_over_avg_after == pytest.approx(expected[res].min_over_avg, abs=1e-9)
    rack_count = len(before.racks) if before.brokers[0].rack is not None else 0
    crowded = {p.name for p in after.partitions if rack_count and max(
        sum(1 for r in p.replicas if before.broker(r).rack == rack) for rack in before.racks
    ) > -(-p.replication_factor // rack_count)}
    flagged = {e.split(":")[0].removeprefix("partition ") for e in report.errors if " rack " in e}
    assert flagged == crowded


def test_a_rack_break_the_plan_does_not_touch_refuses_a_plan_but_not_a_run() -> None:
    """t-0 already sits on brokers 1 and 2, both rack a; the plan only swaps t-1 and t-3.
    The planner must repair such a partition, but running a plan that leaves it alone cannot
    make it worse, so the executor's check names it as a warning and lets the run go."""
    before = Topology(cluster().brokers,
                      tuple(replace(p, replicas=(1, 2)) if p.partition == 0 else p
                            for p in cluster().partitions))
    moves = [Move("t", 1, (2, 4), (2, 3), 100), Move("t", 3, (4, 2), (4, 1), 100)]
    strict = validate_plan(before, moves, Goals(), worse_balance_is_error=False)
    assert any("t-0" in e and "rack a" in e for e in strict.errors)
    lenient = validate_plan(before, moves, Goals(), worse_balance_is_error=False,
                            untouched_breaks_are_errors=False)
    assert lenient.errors == ()
    assert any("t-0" in w and "the plan does not change it" in w for w in lenient.warnings)
    assert planner_validator(before, Goals())(ExecutionPlan(tuple(moves))).errors == ()
    # a move that itself breaks the rule is refused either way
    crowding = [Move("t", 1, (2, 4), (2, 1), 100)]
    assert any("t-1" in e for e in validate_plan(before, crowding, Goals(),
                                                 untouched_breaks_are_errors=False).errors)


def test_a_run_tells_balance_drift_and_refuses_it_only_when_strict() -> None:
    """The cluster drifted since the plan (here: the plan itself makes balance worse): the
    executor's check tells it with its numbers and lets the run go, unless asked to be strict;
    the hard rules refuse either way."""
    worse = ExecutionPlan((Move("t", 0, (1, 3), (2, 3), 100),))
    told = planner_validator(cluster(), Goals())(worse)
    assert told.errors == ()
    assert any("balance gets worse" in w for w in told.warnings), told.warnings
    strict = planner_validator(cluster(), Goals(), strict_balance=True)(worse)
    assert any("balance gets worse" in e for e in strict.errors), strict.errors
    crowding = ExecutionPlan((Move("t", 0, (1, 3), (1, 2), 100),))  # rack a twice
    assert planner_validator(cluster(), Goals())(crowding).errors


def test_draining_an_offline_broker_may_worsen_balance_with_a_warning() -> None:
    """Broker 4 is offline; its drain onto broker 3 leaves the live brokers less level than
    they were: a warning, as when brokers are removed (it was a hard violation, so a dead
    broker could not be drained without --remove-broker)."""
    dead = cluster()
    dead = replace(dead, brokers=(*dead.brokers[:3], Broker(4, "b", CAP, alive=False)))
    moves = [Move("t", 1, (2, 4), (2, 3), 100), Move("t", 3, (4, 2), (3, 2), 100)]
    report = validate_plan(dead, moves, Goals(tolerance=0.1))
    assert report.errors == ()
    assert any("forced by draining removed or offline brokers" in w for w in report.warnings)


def test_draining_an_offline_broker_is_never_put_back() -> None:
    """The planner drains both partitions of offline broker 3 (the tiny one too: the no-worse
    guard put the smallest back on the offline broker when the drain worsened a resource)."""
    from kafka_rebalance.usecases.plan import PlanSettings, build_plan
    from planner.goals import Budget

    brokers = (Broker(1, "a", CAP), Broker(2, "b", CAP), Broker(3, "a", CAP, alive=False),
               Broker(4, "b", CAP), Broker(5, "a", CAP))
    parts = (Partition("t", 0, (1, 2), 100), Partition("t", 1, (5, 4), 100),
             Partition("big", 0, (3, 4), 300), Partition("tiny", 0, (3, 2), 1))
    plan = build_plan(Topology(brokers, parts), PlanSettings(goals=Goals(tolerance=0.1),
                                                             budget=Budget(time_limit_s=2)))
    assert {m.name for m in plan.moves} >= {"big-0", "tiny-0"}
    assert all(3 not in m.target for m in plan.moves)


def test_the_review_names_partitions_short_of_live_replicas_and_those_down_to_one() -> None:
    from planner.ordering import short_of_replicas
    from planner.validate import exposure_warnings

    brokers = tuple(Broker(i, "a" if i % 2 else "b", CAP, alive=i != 4) for i in range(1, 6))
    parts = (Partition("t", 0, (1, 2), 10), Partition("t", 1, (4, 3), 10),
             Partition("t", 2, (2, 4), 10), Partition("u", 0, (4,), 10))
    before = Topology(brokers, parts)
    assert short_of_replicas(before) == {tp(1): 1, tp(2): 1, TopicPartition("u", 0): 0}
    (warning,) = exposure_warnings(before, [Move("t", 1, (4, 3), (5, 3), 10)])
    assert warning.startswith("3 partition(s) have replicas on offline broker(s) [4]; 2 are "
                              "down to one live replica (t-1, t-2)")
    assert "The plan heals 1 of them" in warning
    assert exposure_warnings(cluster(), swap_moves()) == []
