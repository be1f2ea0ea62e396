"""Leader balance (`plan --leader-balance TOL`): fair shares of leaders from each broker's own
replicas, reached by reordering replicas only (no byte copied), never at net out's cost; with
--max-bytes 0 the whole plan moves leadership only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict
from kafka_rebalance.usecases.plan import PlanSettings, build_plan
from planner.arrays import broker_loads, to_arrays
from planner.balance import achievable_targets, deviation
from planner.goals import Budget, Goals
from planner.leader_balance import FairLeaders, _Leaders, leader_level, led
from planner.result import SolverStatus
from planner.solve import plan
from planner.state import SolverState
from planner.validate import validate_plan
from tests.unit.conftest import Rebalance
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_cluster

CAP = Capacity(disk_bytes=10_000_000, net_in_bytes_per_sec=1_000_000,
               net_out_bytes_per_sec=1_000_000)


def one_broker_leads(bytes_in: float = 0.0) -> Topology:
    """Three brokers, each holding every partition (RF 3), broker 1 first in every list."""
    brokers = tuple(Broker(i, None, CAP) for i in (1, 2, 3))
    parts = tuple(Partition("t", n, (1, 2, 3), 100_000, bytes_in, bytes_in) for n in range(12))
    return Topology(brokers, parts)


def test_fair_shares_split_each_partition_over_its_replicas() -> None:
    """RF 2 partitions on (1, 2) and RF 3 on (1, 2, 3): broker 1's fair share is 1/2 + 1/3."""
    brokers = tuple(Broker(i, None, CAP) for i in (1, 2, 3))
    parts = (Partition("a", 0, (1, 2), 10, 600.0), Partition("b", 0, (1, 2, 3), 10, 300.0))
    arrays = to_arrays(Topology(brokers, parts), Goals())
    fair = FairLeaders.of(arrays, arrays.replicas, 0.0)
    assert np.allclose(fair.count, [5 / 6, 5 / 6, 1 / 3])
    assert np.allclose(fair.bytes_in, [400.0, 400.0, 100.0])
    count, bytes_in = led(arrays, arrays.replicas)
    assert count.tolist() == [2, 0, 0] and bytes_in.tolist() == [900.0, 0.0, 0.0]


def test_immaterial_produce_traffic_is_no_leader_imbalance() -> None:
    """One partition takes 2 kB/s (0.2% of a broker's network in): its leader leads 3x its
    fair share of bytes, which no reordering can split; it is no imbalance. At 200 kB/s (20%)
    it is one."""
    def with_one_busy(rate: float) -> Topology:
        brokers = tuple(Broker(i, None, CAP) for i in (1, 2, 3))
        parts = (Partition("lease", 0, (1, 2, 3), 100, rate, rate),
                 *(Partition("t", n, (n % 3 + 1, (n + 1) % 3 + 1, (n + 2) % 3 + 1), 100)
                   for n in range(3)))
        return Topology(brokers, parts)

    quiet = to_arrays(with_one_busy(2_000.0), Goals())
    assert leader_level(quiet, quiet.replicas, 0.1).brokers_outside == 0
    busy = to_arrays(with_one_busy(200_000.0), Goals())
    level = leader_level(busy, busy.replicas, 0.1)
    assert level.brokers_outside == 3 and level.bytes_in_over_fair == pytest.approx(3.0)


def test_leaders_are_levelled_by_reordering_only() -> None:
    topology = one_broker_leads()
    assert plan(topology, Goals(), Budget(time_limit_s=3)).status \
        is SolverStatus.ALREADY_BALANCED
    goals = Goals(leader_balance=0.0)  # each broker's fair share, 4 leaders, exactly
    result = plan(topology, goals, Budget(time_limit_s=3))
    assert result.moves and result.bytes_moved == 0
    assert all(set(m.current) == set(m.target) for m in result.moves)
    arrays = to_arrays(result.after, goals)
    assert led(arrays, arrays.replicas)[0].tolist() == [4, 4, 4]
    assert leader_level(arrays, arrays.replicas, 0.0).brokers_outside == 0
    assert validate_plan(topology, result.moves, goals).valid


def test_a_generated_cluster_levels_leaders_for_no_byte_and_no_net_out() -> None:
    """The goal adds leadership switches only: the same bytes as without it, net out no
    further from its target, and fewer brokers off their fair share of leaders."""
    topology = generate_cluster(brokers=9, new_brokers=0, racks=3, partitions=600, seed=4)
    plain_goals, goals = Goals(), Goals(leader_balance=0.1)
    plain = plan(topology, plain_goals, Budget(time_limit_s=3))
    levelled = plan(topology, goals, Budget(time_limit_s=3))
    assert levelled.bytes_moved == plain.bytes_moved
    assert validate_plan(topology, levelled.moves, goals).balanced
    arrays = to_arrays(topology, goals)
    targets = achievable_targets(arrays, goals)

    def level(after: Topology) -> tuple[int, float]:
        a = to_arrays(after, goals)
        return (leader_level(a, a.replicas, 0.1).brokers_outside,
                float(deviation(arrays, targets, broker_loads(a, a.replicas))[2]))

    (plain_outside, plain_out), (outside, out) = level(plain.after), level(levelled.after)
    assert outside < plain_outside
    assert out <= max(plain_out, goals.tolerance) + 1e-9


def test_max_bytes_0_without_the_goal_levels_net_out_by_leadership_alone() -> None:
    topology = one_broker_leads(bytes_in=10_000.0)
    arrays = to_arrays(topology, Goals())
    targets = achievable_targets(arrays, Goals())
    assert deviation(arrays, targets, broker_loads(arrays, arrays.replicas))[2] > 0.5
    result = plan(topology, Goals(), Budget(max_bytes=0, time_limit_s=3))
    assert result.moves and result.bytes_moved == 0
    after = to_arrays(result.after, Goals())
    assert deviation(arrays, targets, broker_loads(after, after.replicas))[2] <= 0.1 + 1e-9


def test_max_bytes_0_moves_leadership_only_and_levels_net_out() -> None:
    """Broker 1 leads every partition with traffic: net out piles on it. No byte may move,
    so leadership alone spreads net out (and the leaders with it)."""
    topology = one_broker_leads(bytes_in=10_000.0)
    goals = Goals(leader_balance=0.1)
    result = plan(topology, goals, Budget(max_bytes=0, time_limit_s=3))
    assert result.bytes_moved == 0 and result.moves
    report = validate_plan(topology, result.moves, goals)
    assert report.valid and report.balanced
    arrays = to_arrays(result.after, goals)
    assert leader_level(arrays, arrays.replicas, 0.1).brokers_outside == 0


def test_the_plan_file_review_and_page_carry_the_goal_and_its_outcome() -> None:
    from kafka_rebalance.report.plan_view import headline
    from kafka_rebalance.report.review import leaders_text, review_document

    settings = PlanSettings(goals=Goals(leader_balance=0.1), budget=Budget(time_limit_s=3))
    plan_file = build_plan(one_broker_leads(), settings)
    assert plan_file.leaders is not None
    assert (plan_file.leaders.before.brokers_outside, plan_file.leaders.after.brokers_outside) \
        == (3, 0)
    assert plan_file.leaders.before.count_over_fair == pytest.approx(3.0)
    again = plan_from_dict(plan_to_dict(plan_file))
    assert again.goals.leader_balance == 0.1 and again.leaders == plan_file.leaders
    text = leaders_text(plan_file)
    assert text is not None and "3 broker(s) outside before the plan, 0 after" in text
    assert ("leader balance (+/-10%)",
            "3 broker(s) outside their fair share of leaders before, 0 after") \
        in headline(plan_file, 1e6)
    document = review_document(plan_file, 1e6)
    assert document["leader_balance"]["after"]["brokers_outside"] == 0
    plain = build_plan(one_broker_leads(), PlanSettings(goals=Goals(),
                                                        budget=Budget(time_limit_s=3)))
    assert plain.leaders is None and leaders_text(plain) is None and not plain.moves


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_a_tolerance_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(InputError, match="--leader-balance must be between 0 and 1"):
        Goals(leader_balance=value)


def test_plan_max_bytes_0_writes_a_plan_of_leadership_moves(tmp_path: Path,
                                                            rebalance: Rebalance) -> None:
    from kafka_rebalance.files.planfile import read_plan
    from topology.snapshot import write_snapshot

    snapshot, out = tmp_path / "snap.json", tmp_path / "plan.json"
    write_snapshot(snapshot, one_broker_leads(bytes_in=10_000.0))
    code, output = rebalance("plan", "--snapshot", str(snapshot), "--max-bytes", "0",
                             "--leader-balance", "0.1", "--time-limit", "3", "--out", str(out))
    assert code == 0, output
    written = read_plan(out)
    assert written.moves and written.bytes_moved == 0 and written.data_moves == 0
    assert written.leaders is not None and written.leaders.after.brokers_outside == 0


def test_max_bytes_0_cannot_drain_a_broker(tmp_path: Path, rebalance: Rebalance) -> None:
    from topology.snapshot import write_snapshot

    snapshot, out = tmp_path / "snap.json", tmp_path / "plan.json"
    write_snapshot(snapshot, one_broker_leads())
    code, error = rebalance("plan", "--snapshot", str(snapshot), "--max-bytes", "0",
                            "--remove-broker", "3", "--out", str(out))
    assert (code, "--max-bytes 0 moves no data, so it cannot drain --remove-broker 3"
            in error) == (2, True), error
    assert not out.exists()


def test_demotion_is_planned_without_the_leader_goal(tmp_path: Path,
                                                     rebalance: Rebalance) -> None:
    from topology.snapshot import write_snapshot

    snapshot = tmp_path / "snap.json"
    write_snapshot(snapshot, one_broker_leads())
    code, error = rebalance("plan", "--snapshot", str(snapshot), "--demote-broker", "1",
                            "--leader-balance", "0.1")
    assert (code, "leave out" in error and "--leader-balance" in error) == (2, True), error


def _edge_state(budget: Budget) -> tuple[SolverState, _Leaders, int, int, int, int]:
    """Broker 1 leads too many partitions; giving one of its light ones (1 B/s out) to broker 2
    would push broker 2, at its net-out band's upper edge (66 of an average 60), further out;
    broker 3 sits at the lower edge (54)."""

    brokers = tuple(Broker(i, None, CAP) for i in (1, 2, 3))
    parts = ([Partition("p", n, (1, 2), 1000, 0.0, 1.0) for n in range(6)]
             + [Partition("s1", 0, (1, 3), 1000, 0.0, 54.0)]
             + [Partition("q", n, (2, 3), 1000, 0.0, 1.0) for n in range(6)]
             + [Partition("s2", 0, (2, 3), 1000, 0.0, 60.0)]
             + [Partition("s3", 0, (3, 1), 1000, 0.0, 54.0)])
    goals = Goals(leader_balance=0.1)
    arrays = to_arrays(Topology(brokers, tuple(parts)), goals)
    state = SolverState(arrays, goals, budget, achievable_targets(arrays, goals))
    one, two, three = (int(np.flatnonzero(arrays.broker_ids == b)[0]) for b in (1, 2, 3))
    p = int(np.flatnonzero(arrays.topic == arrays.topic_names.index("p"))[0])
    return state, _Leaders(state, 0.1), p, one, two, three


def test_a_switch_blocked_at_a_net_out_edge_is_relayed_through_its_new_leader() -> None:
    """The relay pairs the blocked switch with one of broker 2's own light leaderships passed
    on to broker 3: broker 2's count and net out stay, broker 3's net out rises into the band."""
    from planner.leader_balance import _net_out_kept, _relay

    state, leaders, p, one, two, three = _edge_state(Budget())
    assert state.loads[[one, two, three], 2].tolist() == [60.0, 66.0, 54.0]
    assert state.replicas[p, 1] == two and not _net_out_kept(state, p, 1)
    assert _relay(leaders, p, 1, one)
    assert state.replicas[p, 0] == two
    assert state.loads[[one, two, three], 2].tolist() == [59.0, 66.0, 55.0]
    assert led(state.arrays, state.replicas)[0][[one, two, three]].tolist() == [6, 7, 2]


def test_a_relay_needs_room_for_both_of_its_moves_in_the_budget() -> None:
    from planner.leader_balance import _relay

    state, leaders, p, one, _, _ = _edge_state(Budget(max_moves=1))
    assert not _relay(leaders, p, 1, one)
    assert not state.changed and "moves" in state.budget_hit


def test_levelling_leaders_never_crowds_a_topics_leaders_more() -> None:
    """With --topic-spread the leader phase keeps every topic's leader crowding as it was."""
    import time

    from planner.leader_balance import level_leaders
    from planner.spread import crowding

    topology = generate_cluster(brokers=9, new_brokers=0, racks=3, partitions=600, seed=0)
    goals = Goals(topic_spread=0.2, leader_balance=0.0)
    arrays = to_arrays(topology, goals)
    state = SolverState(arrays, goals, Budget(), achievable_targets(arrays, goals))
    before = crowding(arrays, state.replicas, 0.2)
    assert level_leaders(state, 0.0, time.monotonic() + 30) > 0
    after = crowding(arrays, state.replicas, 0.2)
    assert after.leaders <= before.leaders and after.replicas == before.replicas
