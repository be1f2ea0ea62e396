"""What the plan report shows, as plain values built from a PlanFile (no drawing, no HTML).

Utilizations come from the plan file's own before/after statistics (`BrokerStats.utilization`,
`TargetInfo.of`), exactly what the terminal review prints. The terminal review itself
(`kafka_rebalance.report.review.review`: brokers, balance, totals, targets, warnings) is reused as
it renders: each of its tables cell for cell (`table_view`), each of its lines as text.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from executor.config import Concurrency
from executor.schedule import Schedule, expected_schedule
from kafka_rebalance.report.review import (
    binding_text,
    describe_move,
    eta_text,
    quota_window,
    review,
    review_eta,
)
from planner.planfile import BrokerStats, PlanFile
from topology.model import RESOURCES, Resource
from topology.units import duration_text, rate_text, size_text

RESOURCE_TITLES = {Resource.DISK: "disk", Resource.NET_IN: "net in",
                   Resource.NET_OUT: "net out"}
NO_RACK = "(no rack)"


@dataclass(frozen=True)
class TableView:
    """A table as plain strings: what the terminal shows, without rich's markup."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _plain(cell: object) -> str:
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell or "")


def table_view(table: Table) -> TableView:
    """The cells of a rich table of the review, markup removed (user strings unescaped: the
    HTML template escapes them again for the browser)."""
    columns = [list(column.cells) for column in table.columns]
    rows = tuple(tuple(_plain(column[i]) for column in columns)
                 for i in range(table.row_count))
    headers = tuple(_plain(column.header) for column in table.columns) if table.show_header \
        else ()
    return TableView(_plain(table.title), headers, rows)


@dataclass(frozen=True, slots=True)
class BrokerUtilization:
    """One broker's utilization of one resource before and after, and its target when the
    hard rules force the resource off the average (None otherwise)."""

    broker_id: int
    rack: str
    before: float
    after: float
    target: float | None
    amount_after: float  # bytes (disk) or bytes a second (network) after the plan
    role: str  # new / removed / offline, or empty


@dataclass(frozen=True)
class ResourceView:
    """Per resource: every broker (grouped by rack, in rack order), the average after the
    plan and the tolerance band around it, and whether targets replace the average."""

    resource: Resource
    title: str
    brokers: tuple[BrokerUtilization, ...]
    average_before: float
    average_after: float
    tolerance: float
    forced: bool

    @property
    def band(self) -> tuple[float, float]:
        return (self.average_after * (1 - self.tolerance),
                self.average_after * (1 + self.tolerance))

    @property
    def racks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.rack for b in self.brokers))


@dataclass(frozen=True)
class FlowMatrix:
    """Bytes each broker sends (rows: the partition's leader, which serves the new replicas)
    to each broker that receives a new replica (columns), brokers in rack order."""

    broker_ids: tuple[int, ...]
    racks: tuple[str, ...]  # rack of each broker id, same order
    bytes: tuple[tuple[int, ...], ...]  # bytes[source][target]

    @property
    def total(self) -> int:
        return sum(map(sum, self.bytes))


@dataclass(frozen=True)
class MoveRow:
    """One move as the report's table lists it."""

    index: int
    partition: str
    replicas: str
    change: str
    bytes: str
    start: str
    done_by: str  # when its copy ends


@dataclass(frozen=True)
class PlanView:
    """Everything the plan report shows."""

    created_at: str
    fingerprint: str
    rate_bytes_per_sec: float
    resources: tuple[ResourceView, ...]
    flows: FlowMatrix
    timeline: Schedule
    eta: str
    review_tables: tuple[TableView, ...]  # the terminal review's tables, in its order
    review_lines: tuple[str, ...]  # its lines: targets, warnings, what binds
    moves: tuple[MoveRow, ...]
    moves_total: int
    headline: tuple[tuple[str, str], ...] = ()  # the answer first: (what, value) rows
    # a plan's page, timed one at a time: the same moves with --concurrency auto beside it
    side_by_side: Schedule | None = None


def rack_name(rack: str | None) -> str:
    return NO_RACK if rack is None else rack


def rack_order(brokers: tuple[BrokerStats, ...]) -> list[BrokerStats]:
    """The review's broker order: by rack (no rack first), then id."""
    return sorted(brokers, key=lambda b: (b.rack is not None, b.rack or "", b.id))


def _role(plan: PlanFile, stats: BrokerStats) -> str:
    if stats.id in plan.goals.add_brokers:
        return "new"
    if stats.id in plan.goals.remove_brokers:
        return "removed"
    return "" if stats.alive else "offline"


def resource_view(plan: PlanFile, resource: Resource) -> ResourceView:
    """The utilization of `resource` on every broker, before and after the plan."""
    after = {b.id: b for b in plan.after.brokers}
    forced = plan.targets is not None and plan.targets.forced[RESOURCES.index(resource)]
    rows = []
    for stats in rack_order(plan.before.brokers):
        later = after.get(stats.id)
        target = plan.targets.of(stats.id, resource) if forced and plan.targets else None
        rows.append(BrokerUtilization(
            stats.id, rack_name(stats.rack), stats.utilization(resource),
            later.utilization(resource) if later else 0.0, target,
            later.load.of(resource) if later else 0.0, _role(plan, stats)))
    return ResourceView(resource, RESOURCE_TITLES[resource], tuple(rows),
                        plan.before.resource(resource).average,
                        plan.after.resource(resource).average, plan.goals.tolerance, forced)


def flow_matrix(plan: PlanFile) -> FlowMatrix:
    """Bytes from each move's current leader to each broker that gets a new replica."""
    ordered = rack_order(plan.before.brokers)
    ids = tuple(b.id for b in ordered)
    position = {broker_id: i for i, broker_id in enumerate(ids)}
    cells = [[0] * len(ids) for _ in ids]
    for move in plan.moves:
        source = position.get(move.current[0])
        for added in move.added_brokers:
            target = position.get(added)
            if source is not None and target is not None:
                cells[source][target] += move.size_bytes
    return FlowMatrix(ids, tuple(rack_name(b.rack) for b in ordered),
                      tuple(tuple(row) for row in cells))


def move_rows(timeline: Schedule, limit: int) -> tuple[MoveRow, ...]:
    """The first `limit` moves in plan order with their start and copy end on the timeline."""
    return tuple(MoveRow(slot.index, slot.move.name,
                         f"{list(slot.move.current)} -> {list(slot.move.target)}",
                         describe_move(slot.move), size_text(slot.move.bytes_moved, compact=True),
                         duration_text(slot.start), duration_text(slot.copy_end))
                 for slot in timeline.moves[:limit])


def review_parts(plan: PlanFile, rate_bytes_per_sec: float) -> tuple[
    tuple[TableView, ...], tuple[str, ...]
]:
    """The terminal review without its moves table (the page lists the moves itself): its
    tables and its lines, as plain text."""
    tables: list[TableView] = []
    lines: list[str] = []
    for part in review(plan, 0, rate_bytes_per_sec).renderables:
        if isinstance(part, Table):
            tables.append(table_view(part))
        else:
            lines.append(_plain(part))
    return tuple(tables), tuple(lines)


def plan_view(plan: PlanFile, rate_bytes_per_sec: float, *, concurrency: Concurrency = 1,
              quota_window_seconds: float | None = None, moves_listed: int = 1000) -> PlanView:
    """The report of `plan` with moves timed at `rate_bytes_per_sec` per copy, `concurrency`
    at once, waiting out `quota_window_seconds` (the run's; default the plan's own) as
    executor.schedule does."""
    side_by_side = None
    own = quota_window(plan)
    if quota_window_seconds is None:
        quota_window_seconds = own
    if concurrency == 1 and quota_window_seconds == own:
        both = review_eta(plan, rate_bytes_per_sec)  # the review's own schedules
        timeline, side_by_side = both.one_at_a_time, both.side_by_side
    else:
        timeline = expected_schedule(plan.moves, rate_bytes_per_sec, concurrency,
                                     quota_window_seconds)
    tables, lines = review_parts(plan, rate_bytes_per_sec)
    if side_by_side is not None:
        eta = eta_text(plan, rate_bytes_per_sec)  # the review's own words
    else:
        eta = (f"{duration_text(timeline.eta_seconds)} (concurrency {concurrency}: each "
               "broker sending for at most one move and receiving for at most one, the "
               "busiest brokers first)")
    return PlanView(
        created_at=plan.created_at, fingerprint=plan.fingerprint,
        rate_bytes_per_sec=rate_bytes_per_sec,
        resources=tuple(resource_view(plan, r) for r in RESOURCES),
        flows=flow_matrix(plan), timeline=timeline, eta=eta,
        review_tables=tables, review_lines=lines,
        moves=move_rows(timeline, moves_listed), moves_total=len(plan.moves),
        headline=headline(plan, rate_bytes_per_sec), side_by_side=side_by_side)


def headline(plan: PlanFile, rate_bytes_per_sec: float) -> tuple[tuple[str, str], ...]:
    """The answer a reader wants before any chart: how many moves and bytes, how long one at a
    time and side by side, and whether each resource ends balanced (and if not, why)."""
    eta = review_eta(plan, rate_bytes_per_sec)
    bound = plan.solver.lower_bound_bytes
    ratio = f" ({plan.bytes_moved / bound:.3f} x the lower bound)" if bound > 0 else ""
    balanced = ", ".join(
        f"{RESOURCE_TITLES[r]} {'yes' if plan.after.resource(r).within_tolerance else 'no'}"
        for r in RESOURCES)
    rows = [("moves", f"{len(plan.moves)} ({plan.data_moves} copy data, "
                      f"{len(plan.moves) - plan.data_moves} leadership only)"),
            ("bytes to copy", size_text(plan.bytes_moved, compact=True) + ratio),
            ("ETA", f"{duration_text(eta.one_at_a_time.eta_seconds)} one at a time, "
                    f"{duration_text(eta.side_by_side.eta_seconds)} with --concurrency auto, "
                    f"at {rate_text(rate_bytes_per_sec, compact=True)} per copy"),
            (f"balanced (+/-{plan.goals.tolerance:.0%})", balanced)]
    if plan.spread is not None:
        before, after = plan.spread.before, plan.spread.after
        rows.append((f"topic spread (+{plan.spread.tolerance:.0%})",
                     f"{before.topics} topic(s) crowd a broker before, {after.topics} after"))
    if plan.tiered is not None:
        rows.append(("in remote storage", f"{size_text(plan.tiered.remote_bytes, compact=True)} "
                     f"(not copied: {size_text(plan.tiered.moved_remote_bytes, compact=True)} "
                     "of it in partitions this plan moves)"))
    if plan.log_dirs is not None:
        dirs = plan.log_dirs
        rows.append(("log dirs (JBOD)",
                     f"{dirs.before.outside} of {dirs.before.dirs} dir(s) outside "
                     f"+/-{dirs.tolerance:.0%} before, {dirs.after.outside} after; "
                     f"{len(dirs.moves)} move(s) between dirs "
                     f"({size_text(dirs.bytes_moved, compact=True)} on local disks)"))
    if plan.leaders is not None:
        rows.append((f"leader balance (+/-{plan.leaders.tolerance:.0%})",
                     f"{plan.leaders.before.brokers_outside} broker(s) outside their fair share "
                     f"of leaders before, {plan.leaders.after.brokers_outside} after"))
    if plan.requests is not None:
        rows.append((f"request balance (+/-{plan.requests.tolerance:.0%})",
                     f"{plan.requests.before.brokers_outside} broker(s) outside their fair share "
                     f"of requests before, {plan.requests.after.brokers_outside} after; the "
                     f"busiest {plan.requests.before.over_fair:.2f}x -> "
                     f"{plan.requests.after.over_fair:.2f}x"))
    unreachable = binding_text(plan)
    if unreachable is not None:
        rows.append(("why not", _plain(unreachable)))
    return tuple(rows)
