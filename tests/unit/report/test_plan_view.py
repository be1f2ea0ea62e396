"""The plan report's values: what the terminal review says, per broker, per flow, per move."""

from __future__ import annotations

from rich.console import Console

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS
from executor.schedule import START_SECONDS
from kafka_rebalance.report.plan_view import PlanView, flow_matrix, plan_view, resource_view
from kafka_rebalance.report.review import review
from planner.planfile import PlanFile
from topology.model import RESOURCES, Resource
from topology.units import duration_text

RATE = 50e6
MB = 1_000_000


def view_of(plan: PlanFile, concurrency: int = 1) -> PlanView:
    return plan_view(plan, RATE, concurrency=concurrency,
                     quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)


def terminal_text(plan: PlanFile) -> str:
    console = Console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(review(plan, 0, RATE))
    return console.export_text()


def test_utilizations_are_the_reviews_grouped_by_rack(small_plan: PlanFile) -> None:
    brokers = next(t for t in view_of(small_plan).review_tables if t.title.startswith("Brokers"))
    hostile = small_plan.before.brokers[0].rack
    for index, resource in enumerate(RESOURCES):
        view = resource_view(small_plan, resource)
        assert [b.broker_id for b in view.brokers] == [1, 2, 3, 4, 5, 6]
        assert view.racks == (hostile, "b")  # sorted as the review sorts them
        column = brokers.headers.index(("disk", "net in", "net out")[index])
        for broker, row in zip(view.brokers, brokers.rows, strict=True):
            before, after = f"{broker.before:.1%}", f"{broker.after:.1%}"
            assert row[column] == (before if before == after else f"{before} -> {after}")
            assert row[0] == broker.rack
    disk = resource_view(small_plan, Resource.DISK)
    by_id = {b.broker_id: b for b in disk.brokers}
    assert by_id[3].before == 0.0 and by_id[3].after == 40 * MB / (400 * MB)
    assert by_id[3].role == "new"
    assert disk.band == (disk.average_after * 0.9, disk.average_after * 1.1)
    assert not disk.forced and all(b.target is None for b in disk.brokers)


def test_forced_targets_are_carried_where_the_rack_rule_binds(zoned_plan: PlanFile) -> None:
    assert zoned_plan.targets is not None and any(zoned_plan.targets.forced)
    for index, resource in enumerate(RESOURCES):
        view = resource_view(zoned_plan, resource)
        assert view.forced == zoned_plan.targets.forced[index]
        targets = [b.target for b in view.brokers]
        if view.forced:
            assert all(t is not None for t in targets)
            assert len({round(t or 0, 6) for t in targets}) > 1  # not all the average
        else:
            assert targets == [None] * len(targets)


def test_flows_go_from_the_leader_to_each_new_replica(small_plan: PlanFile) -> None:
    flows = flow_matrix(small_plan)
    assert flows.total == small_plan.bytes_moved == 80 * MB
    at = {b: i for i, b in enumerate(flows.broker_ids)}
    assert flows.bytes[at[1]][at[3]] == 40 * MB  # orders-0: leader 1 serves broker 3
    assert flows.bytes[at[4]][at[6]] == 30 * MB  # orders-1: leader 4 serves broker 6
    assert flows.bytes[at[5]][at[6]] == 10 * MB  # events-0: leader 5 serves broker 6
    assert sum(1 for row in flows.bytes for cell in row if cell) == 3


def test_the_review_is_reused_table_for_table_and_line_for_line(small_plan: PlanFile) -> None:
    view = view_of(small_plan)
    text = terminal_text(small_plan)
    titles = [t.title for t in view.review_tables]
    assert any(t.startswith("Brokers") for t in titles) and "Totals" in titles
    for table in view.review_tables:
        for row in table.rows:
            for cell in row:
                assert cell in text, cell  # every cell as the terminal prints it
    warning = small_plan.warnings[0]
    assert f"warning: {warning}" in view.review_lines  # unescaped: the page escapes it
    totals = next(t for t in view.review_tables if t.title == "Totals")
    assert ("bytes moved", "80.0MB") in totals.rows


def test_moves_are_listed_up_to_the_limit_with_their_times(big_plan: PlanFile) -> None:
    view = plan_view(big_plan, RATE, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS,
                     moves_listed=100)
    assert len(view.moves) == 100 and view.moves_total == 5000
    assert [m.index for m in view.moves] == list(range(1, 101))
    # no window wait (Prometheus shows nothing copied), only the run's start-up
    assert view.moves[0].start == duration_text(START_SECONDS)
    assert view.eta.split(" ")[0] == view.moves[-1].done_by or view.moves_total > 100
    concurrent = view_of(big_plan, concurrency=4)
    assert concurrent.timeline.eta_seconds < view.timeline.eta_seconds
    assert "concurrency 4: each broker sending for at most one move" in concurrent.eta


def test_the_report_leads_with_the_answer(small_plan: PlanFile) -> None:
    view = plan_view(small_plan, 1e6, quota_window_seconds=DEFAULT_QUOTA_WINDOW_SECONDS)
    rows = dict(view.headline)
    assert rows["moves"] == "4 (3 copy data, 1 leadership only)"
    assert rows["bytes to copy"].startswith("80.0MB (1.143 x the lower bound)")
    assert "one at a time" in rows["ETA"] and "with --concurrency auto" in rows["ETA"]
    assert rows["balanced (+/-10%)"].startswith("disk ")
    assert "why not" in rows  # the plan names what binds ("none")
