"""The imbalance verdict on small hand-built clusters: each reason to rebalance is found, and a
balanced cluster gets none."""

from __future__ import annotations

from kafka_rebalance.autobalance.imbalance import imbalance_verdict
from planner.goals import Budget, Goals
from planner.solve import plan
from topology.model import Broker, Capacity, Partition, Topology, replace_replicas
from topology.synthetic import generate_zoned

CAP = Capacity(1000, 1000, 1000)


def cluster(placements: list[tuple[int, ...]], brokers: tuple[Broker, ...] | None = None,
            racks: tuple[str, ...] = ("a", "a", "b", "b")) -> Topology:
    members = brokers or tuple(Broker(i + 1, rack, CAP) for i, rack in enumerate(racks))
    return Topology(members, tuple(Partition("t", i, reps, 100, 10.0, 10.0)
                                   for i, reps in enumerate(placements)))


BALANCED = [(1, 3), (2, 4), (3, 1), (4, 2)]


def test_a_balanced_cluster_is_not_due() -> None:
    verdict = imbalance_verdict(cluster(BALANCED), Goals(tolerance=0.10))
    assert not verdict.due
    assert "within +/-10%" in verdict.summary()


def test_an_empty_new_broker_makes_a_rebalance_due_and_is_named() -> None:
    brokers = tuple(Broker(i + 1, r, CAP) for i, r in enumerate("aabba"))
    # average disk utilization 16%: brokers 1-4 at 20% lie inside +/-30%, broker 5 at 0% not
    verdict = imbalance_verdict(cluster(BALANCED, brokers), Goals(tolerance=0.30))
    assert verdict.due
    disk = next(r for r in verdict.reasons if r.startswith("disk:"))
    assert "min/avg 0.00" in disk and "(broker 5 at 0.00x the average)" in disk
    assert "broker 1 " not in disk  # brokers inside the band are not listed


def test_a_wide_tolerance_accepts_a_moderate_spread() -> None:
    skewed = [(1, 3), (1, 4), (2, 3), (2, 4), (1, 3), (2, 4)]  # 3,3,3,3 replicas ...
    skewed_leaders = cluster(skewed)  # ... but leaders only on brokers 1 and 2
    assert imbalance_verdict(skewed_leaders, Goals(tolerance=0.10)).due
    assert not imbalance_verdict(cluster(BALANCED), Goals(tolerance=0.5)).due


def test_replicas_on_a_dead_broker_make_it_due() -> None:
    brokers = (Broker(1, "a", CAP), Broker(2, "a", CAP), Broker(3, "b", CAP),
               Broker(4, "b", CAP), Broker(9, None, CAP, alive=False))
    verdict = imbalance_verdict(cluster([*BALANCED, (9, 3)], brokers), Goals(tolerance=0.9))
    assert verdict.due
    assert any("offline broker 9" in r for r in verdict.reasons)


def test_a_rack_rule_violation_makes_it_due() -> None:
    # both replicas of t-0 on rack a; loads stay even, so only the rack rule is broken
    verdict = imbalance_verdict(cluster([(1, 2), (3, 4), (2, 1), (4, 3)]),
                                Goals(tolerance=0.10))
    assert verdict.due
    assert any("rack a holds 2" in r for r in verdict.reasons)
    assert not any(r.startswith("disk:") for r in verdict.reasons)


def test_zone_bound_clusters_are_judged_against_their_targets() -> None:
    """Three zones, RF 3, a third broker in zone a: once the plan levels each zone, the
    cluster is balanced although zone a sits below the average; before, the empty broker
    makes it due, and the reason speaks of targets."""
    topology = generate_zoned((2, 2, 2), (1, 0, 0))
    goals = Goals(add_brokers=frozenset({7}))
    before = imbalance_verdict(topology, goals)
    assert before.due
    assert any("off its target" in r for r in before.reasons), before.reasons
    result = plan(topology, goals, Budget(time_limit_s=4))
    after = replace_replicas(topology, {m.key: m.target for m in result.moves})
    assert not imbalance_verdict(after, Goals()).due


def test_leaders_off_their_fair_share_make_it_due_only_with_the_leader_goal() -> None:
    """Bytes level (no traffic, four replicas a broker), but brokers 1 and 2 lead everything:
    4 leaders each where the fair share is 2 (a band of 1-3 at +/-10%, rounded out)."""
    from kafka_rebalance.autobalance.worth import judge_plan
    from kafka_rebalance.usecases.plan import PlanSettings, build_plan

    brokers = tuple(Broker(i + 1, rack, CAP) for i, rack in enumerate("aabb"))
    topology = Topology(brokers, tuple(Partition("t", i, reps, 100) for i, reps in
                                       enumerate([(1, 3)] * 4 + [(2, 4)] * 4)))
    assert not imbalance_verdict(topology, Goals(tolerance=0.10)).due
    goals = Goals(tolerance=0.10, leader_balance=0.1)
    verdict = imbalance_verdict(topology, goals)
    assert verdict.due
    assert "leaders: 4 broker(s) off their fair share" in verdict.summary()
    plan_file = build_plan(topology, PlanSettings(goals=goals, budget=Budget(time_limit_s=3)))
    assert plan_file.moves and plan_file.bytes_moved == 0
    worth = judge_plan(plan_file, 0, 0)
    assert worth.worth and "levels leaders (--leader-balance): 4 -> 0 broker(s)" in worth.reason
    after = replace_replicas(topology, plan_file.assignment())
    assert not imbalance_verdict(after, goals).due


def test_a_jbod_broker_with_one_full_dir_makes_it_due_and_its_levelling_is_worth_running() -> None:
    """Bytes level between brokers, but broker 1 keeps all of them in one of its two dirs."""
    from kafka_rebalance.autobalance.worth import judge_plan
    from kafka_rebalance.usecases.plan import PlanSettings, build_plan
    from topology.model import LogDir, TopicPartition

    brokers = (Broker(1, "a", CAP, log_dirs=(LogDir("/d1"), LogDir("/d2"))),
               Broker(2, "b", CAP))
    parts = tuple(Partition("t", i, (1, 2), 100) for i in range(4))
    dirs = {(TopicPartition("t", i), 1): "/d1" for i in range(4)}
    topology = Topology(brokers, parts, (), dirs)
    goals = Goals(tolerance=0.10)
    verdict = imbalance_verdict(topology, goals)
    assert verdict.due and "log dirs: 2 of 2 dir(s)" in verdict.summary()
    plan_file = build_plan(topology, PlanSettings(goals=goals, budget=Budget(time_limit_s=3)))
    assert not plan_file.moves and plan_file.log_dirs is not None
    assert len(plan_file.log_dirs.moves) == 2
    worth = judge_plan(plan_file, 0, 0)
    assert worth.worth and "levels log dirs: 2 -> 0" in worth.reason
    level = dict(dirs) | {(m.key, m.broker): m.target for m in plan_file.log_dirs.moves}
    assert not imbalance_verdict(Topology(brokers, parts, (), level), goals).due
