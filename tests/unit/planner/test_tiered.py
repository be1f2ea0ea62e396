"""Tiered storage in the plan: local bytes are what is balanced and copied; the plan file,
review, --json and page say what stays in remote storage."""

from __future__ import annotations

from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict
from kafka_rebalance.usecases.plan import PlanSettings, build_plan
from planner.goals import Budget, Goals
from topology.model import Broker, Capacity, Partition, Topology

CAP = Capacity(disk_bytes=10_000_000, net_in_bytes_per_sec=1_000_000,
               net_out_bytes_per_sec=1_000_000)


def drained(remote: int) -> Topology:
    """Broker 3 to drain; its partition keeps `remote` bytes in remote storage, 1 MB local."""
    brokers = tuple(Broker(i, None, CAP) for i in (1, 2, 3))
    parts = (Partition("t", 0, (1, 3), 1_000_000, 0.0, 0.0, remote),
             Partition("t", 1, (1, 2), 1_000_000))
    return Topology(brokers, parts)


def test_a_move_copies_and_balances_local_bytes_and_the_review_says_what_stays_remote() -> None:
    from kafka_rebalance.report.plan_view import headline
    from kafka_rebalance.report.review import review_document, tiered_text

    settings = PlanSettings(goals=Goals(remove_brokers=frozenset({3}), tolerance=0.5),
                            budget=Budget(time_limit_s=3))
    plan = build_plan(drained(9_000_000), settings)
    assert [m.name for m in plan.moves] == ["t-0"] and plan.bytes_moved == 1_000_000
    assert plan.tiered is not None
    assert (plan.tiered.remote_bytes, plan.tiered.moved_remote_bytes) == (9_000_000, 9_000_000)
    assert plan_from_dict(plan_to_dict(plan)).tiered == plan.tiered
    text = tiered_text(plan)
    assert text is not None and "9.00 MB is in remote storage" in text
    assert text.endswith("1.00 MB to copy")
    assert ("in remote storage", "9.0MB (not copied: 9.0MB of it in partitions this plan moves)") \
        in headline(plan, 1e6)
    assert review_document(plan, 1e6)["tiered_storage"]["moved_remote_bytes"] == 9_000_000


def test_without_remote_bytes_the_plan_says_nothing_of_tiers() -> None:
    settings = PlanSettings(goals=Goals(remove_brokers=frozenset({3}), tolerance=0.5),
                            budget=Budget(time_limit_s=3))
    plan = build_plan(drained(0), settings)
    assert plan.tiered is None and "tiered_storage" not in plan_to_dict(plan)
