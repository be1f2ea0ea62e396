"""Request balance (`plan --request-balance TOL`): request rates and request capacities read
from snapshots and capacities files, fair shares by capacity, a cluster level in bytes whose
requests crowd brokers levelled by leadership first, and plans without the goal unchanged."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict
from kafka_rebalance.usecases.plan import PlanSettings, build_plan
from planner.arrays import to_arrays
from planner.goals import Budget, Goals
from planner.requests import FairRequests, request_level, served
from planner.solve import plan
from planner.validate import validate_plan
from topology.capacities import parse_capacities
from topology.model import Broker, Capacity, Partition, Topology
from topology.snapshot import topology_from_dict, topology_to_dict
from topology.synthetic import generate_cluster

CAP = Capacity(disk_bytes=10_000_000, net_in_bytes_per_sec=1_000_000,
               net_out_bytes_per_sec=1_000_000)


def chatty_on_one_broker(request_capacity: float | None = None) -> Topology:
    """Four brokers on two racks, RF 2, bytes level; broker 1 leads all eight partitions of
    the chatty topic (500 requests a second each), the others share the quiet one."""
    brokers = tuple(Broker(i, "r1" if i <= 2 else "r2",
                           replace(CAP, requests_per_sec=request_capacity))
                    for i in (1, 2, 3, 4))
    chatty = [Partition("chatty", n, (1, 3 + n % 2), 100_000, requests_per_sec=500.0)
              for n in range(8)]
    quiet = [Partition("quiet", n, (2, 3 + n // 2 % 2) if n % 2 == 0 else (3 + n // 2 % 2, 2),
                       100_000, requests_per_sec=5.0) for n in range(8)]
    return Topology(brokers, tuple(chatty + quiet))


def test_a_broker_serves_the_requests_of_the_partitions_it_leads() -> None:
    arrays = to_arrays(chatty_on_one_broker(), Goals())
    assert served(arrays, arrays.replicas).tolist() == [4000.0, 20.0, 10.0, 10.0]
    fair = FairRequests.of(arrays, 0.2)
    assert np.allclose(fair.fair, 4040.0 / 4)
    level = request_level(arrays, arrays.replicas, 0.2)
    assert level.brokers_outside == 4 and level.over_fair == pytest.approx(4000 / 1010)


def test_fair_shares_follow_the_request_capacities() -> None:
    topology = chatty_on_one_broker()
    brokers = tuple(replace(b, capacity=replace(b.capacity, requests_per_sec=2000.0
                                                if b.id == 4 else 1000.0))
                    for b in topology.brokers)
    arrays = to_arrays(topology.with_brokers(brokers), Goals())
    assert np.allclose(FairRequests.of(arrays, 0.2).fair, [808.0, 808.0, 808.0, 1616.0])


def test_a_cluster_level_in_bytes_gets_its_requests_levelled_leadership_first() -> None:
    """Broker 1 leads every chatty partition; its followers are on 3 and 4. Switches give
    each of those two its share without overshooting, then leader replicas move to broker 2,
    which holds no chatty replica, in swaps that keep the bytes level."""
    topology = chatty_on_one_broker()
    assert plan(topology, Goals(), Budget(time_limit_s=3)).moves == ()
    goals = Goals(request_balance=0.2)
    result = plan(topology, goals, Budget(time_limit_s=3))
    report = validate_plan(topology, result.moves, goals)
    assert report.valid and report.balanced, (report.errors, report.warnings)
    switched = [m for m in result.moves if m.leadership_only]
    assert {m.target[0] for m in switched} == {3, 4}  # to the followers, no byte copied
    after = to_arrays(result.after, goals)
    assert request_level(after, after.replicas, 0.2).brokers_outside == 0
    assert served(after, after.replicas).max() <= 1.2 * 1010


def test_requests_move_leaders_with_their_data_when_no_follower_can_take_them() -> None:
    """Every chatty partition is led by broker 1 and followed by broker 2 only: a switch
    just hands the crowd to broker 2, so leader replicas move to brokers 3 and 4."""
    brokers = tuple(Broker(i, None, CAP) for i in (1, 2, 3, 4))
    chatty = [Partition("chatty", n, (1, 2), 100_000, requests_per_sec=500.0) for n in range(4)]
    quiet = [Partition("quiet", n, (3, 4) if n % 2 else (4, 3), 100_000, requests_per_sec=1.0)
             for n in range(4)]
    topology = Topology(brokers, tuple(chatty + quiet))
    goals = Goals(request_balance=0.5, tolerance=0.5)
    result = plan(topology, goals, Budget(time_limit_s=3))
    after = to_arrays(result.after, goals)
    before = to_arrays(topology, goals)
    assert (request_level(after, after.replicas, 0.5).brokers_outside
            < request_level(before, before.replicas, 0.5).brokers_outside)
    assert any(not m.leadership_only for m in result.moves)
    assert validate_plan(topology, result.moves, goals).valid


def test_without_the_goal_request_rates_change_no_plan() -> None:
    plain = generate_cluster(brokers=9, new_brokers=3, racks=3, partitions=300, seed=3)
    rng = np.random.default_rng(1)
    rated = plain.with_partitions(replace(p, requests_per_sec=float(rng.uniform(0, 500)))
                                  for p in plain.partitions)
    goals = Goals(add_brokers=frozenset({10, 11, 12}))
    first = plan(plain, goals, Budget(time_limit_s=2, seed=1))
    second = plan(rated, goals, Budget(time_limit_s=2, seed=1))
    assert [(m.key, m.target) for m in first.moves] == [(m.key, m.target) for m in second.moves]


def test_the_plan_file_and_the_review_carry_the_goal_and_its_outcome() -> None:
    from kafka_rebalance.report.plan_view import headline
    from kafka_rebalance.report.review import requests_table, requests_text

    settings = PlanSettings(goals=Goals(request_balance=0.2), budget=Budget(time_limit_s=3))
    plan_file = build_plan(chatty_on_one_broker(), settings)
    assert plan_file.requests is not None
    assert plan_file.requests.before.brokers_outside == 4
    assert plan_file.requests.after.over_fair < plan_file.requests.before.over_fair
    again = plan_from_dict(json.loads(json.dumps(plan_to_dict(plan_file))))
    assert again.goals.request_balance == 0.2 and again.requests == plan_file.requests
    text = requests_text(plan_file)
    assert text is not None and "4,040 produce and fetch requests a second, +/-20%" in text
    assert any(label == "request balance (+/-20%)" for label, _ in headline(plan_file, 1e6))
    assert [(b.id, b.before) for b in plan_file.requests.brokers] == [
        (1, 4000.0), (2, 20.0), (3, 10.0), (4, 10.0)]
    assert all(b.fair == 1010.0 for b in plan_file.requests.brokers)
    table = requests_table(plan_file)
    assert table is not None and table.row_count == 4
    plain = build_plan(chatty_on_one_broker(),
                       PlanSettings(goals=Goals(), budget=Budget(time_limit_s=3)))
    assert plain.requests is None and requests_text(plain) is None
    assert "request_balance" not in plan_to_dict(plain)["goals"]


@pytest.mark.parametrize("request_capacity", [None, 1_000_000.0])
def test_the_review_marks_the_brokers_the_verdict_counts_outside(
        request_capacity: float | None) -> None:
    """With a large request capacity, 1% of it is a wider band than +/-20% of the fair share:
    the per-broker marks follow the band the verdict counts with, and the review's --json
    writes the section as the plan file does."""
    from kafka_rebalance.report.review import requests_table, review_document

    settings = PlanSettings(goals=Goals(request_balance=0.2), budget=Budget(time_limit_s=3))
    plan_file = build_plan(chatty_on_one_broker(request_capacity), settings)
    assert plan_file.requests is not None
    marked = sum(b.outside_after for b in plan_file.requests.brokers)
    assert marked == plan_file.requests.after.brokers_outside
    if request_capacity is not None:  # broker 1 at 4x its fair share is inside a 10k band
        assert plan_file.requests.before.brokers_outside == 0
        assert all(b.high == b.fair + 10_000 for b in plan_file.requests.brokers)
    table = requests_table(plan_file)
    assert table is not None
    shown = list(table.columns[3].cells)
    assert sum(str(cell).endswith("*") for cell in shown) == marked
    section = plan_to_dict(plan_file)["request_balance"]
    assert review_document(plan_file, 1e6)["request_balance"] == section
    del section["brokers"][0]["low"], section["brokers"][0]["high"]  # as plans before the band
    old = plan_from_dict({**plan_to_dict(plan_file), "request_balance": section})
    assert old.requests is not None and old.requests.brokers[0].high == pytest.approx(
        plan_file.requests.brokers[0].fair * 1.2)


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_a_tolerance_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(InputError, match="--request-balance must be between 0 and 1"):
        Goals(request_balance=value)


def test_snapshots_carry_request_rates_only_when_they_have_them() -> None:
    topology = chatty_on_one_broker(request_capacity=20_000.0)
    doc = topology_to_dict(topology)
    assert doc["partitions"][0]["requests_per_sec"] == 500.0
    assert doc["brokers"][0]["capacity"]["requests_per_sec"] == 20_000
    again = topology_from_dict(json.loads(json.dumps(doc)))
    assert again.partitions == topology.partitions
    assert again.brokers[0].capacity.requests_per_sec == 20_000
    plain = topology_to_dict(generate_cluster(brokers=3, new_brokers=0, racks=3,
                                              partitions=10, seed=1))
    assert not any("requests_per_sec" in p for p in plain["partitions"])
    assert not any("requests_per_sec" in b["capacity"] for b in plain["brokers"])


@pytest.mark.parametrize("value", [-5.0, float("inf"), "lots", True])
def test_a_bad_request_rate_in_a_snapshot_is_refused(value: object) -> None:
    doc = topology_to_dict(chatty_on_one_broker())
    doc["partitions"][3]["requests_per_sec"] = value
    with pytest.raises(InputError, match="requests_per_sec"):
        topology_from_dict(doc)


def test_capacities_files_give_request_capacity_in_counts_a_second() -> None:
    caps = parse_capacities({"default": {"disk_bytes": "1TB", "net_in_bytes_per_sec": "1MB/s",
                                         "net_out_bytes_per_sec": "1MB/s",
                                         "requests_per_sec": "20k/s"},
                             "brokers": {2: {"requests_per_sec": 5000}}})
    assert caps.for_broker(1, None).requests_per_sec == 20_000
    assert caps.for_broker(2, None).requests_per_sec == 5000
    for bad, why in (("-3", "cannot read"), ("5e12", "implausibly large"),
                     ("20MB/s", "cannot read"), ([1], "cannot read")):
        with pytest.raises(InputError, match=why):
            parse_capacities({"default": {"requests_per_sec": bad}})
    with pytest.raises(InputError, match="did you mean 'requests_per_sec'"):
        parse_capacities({"default": {"request_per_sec": 5}})


def test_auto_finds_a_rebalance_due_and_worth_running_for_requests() -> None:
    from kafka_rebalance.autobalance.imbalance import imbalance_verdict
    from kafka_rebalance.autobalance.worth import judge_plan

    topology = chatty_on_one_broker()
    assert not imbalance_verdict(topology, Goals()).due
    verdict = imbalance_verdict(topology, Goals(request_balance=0.2))
    assert verdict.due and any(r.startswith("requests: 4 broker(s)") for r in verdict.reasons)
    plan_file = build_plan(topology, PlanSettings(goals=Goals(request_balance=0.2),
                                                  budget=Budget(time_limit_s=3)))
    worth = judge_plan(plan_file, 0, 0)
    assert worth.worth and "levels requests (--request-balance): 4 ->" in worth.reason


def test_show_adds_a_requests_row_only_for_snapshots_with_request_rates() -> None:
    from kafka_rebalance.report.cluster_tables import spread_table
    from planner.requests import request_spread

    assert request_spread(chatty_on_one_broker()) == (4000 / 1010, 10 / 1010)
    assert spread_table(chatty_on_one_broker()).row_count == 4
    plain = generate_cluster(brokers=3, new_brokers=0, racks=3, partitions=10, seed=1)
    assert request_spread(plain) is None and spread_table(plain).row_count == 3


def test_with_leader_balance_too_requests_are_levelled_without_undoing_the_leaders() -> None:
    """Request levelling runs after leader levelling: with both goals, no broker ends
    further outside its fair share of leaders than the leader goal alone leaves it."""
    from planner.leader_balance import leader_level

    plain = generate_cluster(brokers=9, new_brokers=0, racks=3, partitions=600, seed=5)
    topics = sorted({p.topic for p in plain.partitions})
    rated = plain.with_partitions(
        replace(p, requests_per_sec=300.0 if p.topic in topics[:2] else 5.0)
        for p in plain.partitions)
    leaders_only = Goals(leader_balance=0.1)
    both = Goals(leader_balance=0.1, request_balance=0.2)
    first = plan(rated, leaders_only, Budget(time_limit_s=3, seed=1))
    second = plan(rated, both, Budget(time_limit_s=3, seed=1))
    before = to_arrays(rated, both)
    one, two = to_arrays(first.after, both), to_arrays(second.after, both)
    assert (leader_level(two, two.replicas, 0.1).brokers_outside
            <= leader_level(one, one.replicas, 0.1).brokers_outside)
    assert (request_level(two, two.replicas, 0.2).over_fair
            < request_level(before, before.replicas, 0.2).over_fair)
