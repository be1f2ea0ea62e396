"""The dry-run review of a plan: per-broker before/after, spread, first moves, totals.

Everything renders from a PlanFile, so `plan` and `diff` show the same review, as tables or as
one JSON document (`review_document`, for --json), and the HTML report reuses the tables cell
for cell (`kafka_rebalance.report.plan_view`). The ETA is `executor.schedule.plan_eta`'s model.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS
from executor.schedule import COPY_EFFICIENCY, DEFAULT_GAP_SECONDS, PlanEta, plan_eta
from kafka_rebalance.report.layout import WIDE, fit
from planner.planfile_schema import log_dirs_to_dict, requests_to_dict
from planner.result import Move, SolverStatus
from topology.model import RESOURCES, Resource
from topology.units import duration_text, rate_text, size_text

if TYPE_CHECKING:
    from planner.planfile import BrokerStats, PlanFile

_TITLES = {Resource.DISK: "disk", Resource.NET_IN: "net in", Resource.NET_OUT: "net out"}

def _arrow(before: str, after: str) -> str:
    return before if before == after else f"{before} -> {after}"


def _util(stats: BrokerStats | None, res: Resource, compact: bool = False) -> str:
    if stats is None:
        return "-"
    value = stats.utilization(res)
    return f"{value * 100:.0f}" if compact else f"{value:.1%}"


def _with_target(plan: PlanFile, broker_id: int, res: Resource, text: str) -> str:
    """'text (43%)' where the hard rules force this resource off the average."""
    targets = plan.targets
    if targets is None or not targets.forced[RESOURCES.index(res)]:
        return text
    target = targets.of(broker_id, res)
    return text if target is None else f"{text} ({target:.0%})"


class BrokerRole(StrEnum):
    """What the plan does with a broker beyond balancing it."""

    ADDED = "added"  # --add-broker
    REMOVED = "removed"  # --remove-broker: drained
    OFFLINE = "offline"  # alive: false in the snapshot
    CORDONED = "cordoned"  # cordoned.log.dirs (KIP-1066): no new replica


def broker_role(plan: PlanFile, broker: BrokerStats) -> BrokerRole | None:
    if broker.id in plan.goals.add_brokers:
        return BrokerRole.ADDED
    if broker.id in plan.goals.remove_brokers:
        return BrokerRole.REMOVED
    if not broker.alive:
        return BrokerRole.OFFLINE
    return BrokerRole.CORDONED if broker.id in plan.goals.cordoned_brokers else None


def replicas_text(count: int) -> str:
    """'1 replica', '11 replicas'."""
    return f"{count} replica" + ("" if count == 1 else "s")


def _role_tag(plan: PlanFile, broker: BrokerStats, compact: bool = False) -> str:
    """' (new)' for an added broker without replicas; an added broker that already holds some
    says so, since --add-broker does not make it empty (compact: ' (added)')."""
    role = broker_role(plan, broker)
    if role is None:
        return ""
    if role is BrokerRole.ADDED:
        if not broker.replicas:
            return " (new)"
        return (" (added)" if compact
                else f" (added, already holds {replicas_text(broker.replicas)})")
    return f" ({role.value})"


def broker_table(plan: PlanFile, width: int | None = None) -> Table:
    """One row per broker: rack, replicas, leaders and utilization per resource, before -> after
    (and the target in brackets where the rack rule keeps it off the average). Narrower than
    the full layout: whole percents, then without leaders."""
    return fit(width, [lambda: _broker_table(plan, False, True),
                        lambda: _broker_table(plan, True, True),
                        lambda: _broker_table(plan, True, False)])


def _broker_table(plan: PlanFile, compact: bool, leaders: bool) -> Table:
    after = {b.id: b for b in plan.after.brokers}
    forced = plan.targets is not None and any(plan.targets.forced)
    title = "Brokers (before -> after" + (", target in brackets" if forced else "") + (
        "; utilization in %)" if compact else ")")
    table = Table(title=title)
    names = ["rack", "broker", "replicas", *(["leaders"] if leaders else []),
             *(_TITLES[r] for r in RESOURCES)]
    for header in names:
        table.add_column(header, justify="left" if header in ("rack", "broker") else "right",
                         overflow="fold")
    rows = sorted(plan.before.brokers, key=lambda b: (b.rack is not None, b.rack or "", b.id))
    for b in rows:
        a = after.get(b.id)
        table.add_row(
            escape(str(b.rack)), f"{b.id}{_role_tag(plan, b, compact)}",
            _arrow(str(b.replicas), str(a.replicas if a else "-")),
            *([_arrow(str(b.leaders), str(a.leaders if a else "-"))] if leaders else []),
            *(_with_target(plan, b.id, r, _arrow(_util(b, r, compact), _util(a, r, compact)))
              for r in RESOURCES),
        )
    return table


def spread_table(plan: PlanFile, width: int | None = None) -> Table:
    """Per resource: average utilization, max/avg and min/avg before -> after, the farthest
    broker's distance from its target, and whether every broker is within tolerance (narrower:
    without min/avg, then without the average)."""
    return fit(width, [lambda: _spread_table(plan, True, True),
                        lambda: _spread_table(plan, True, False),
                        lambda: _spread_table(plan, False, False)])


def _spread_table(plan: PlanFile, average: bool, lowest: bool) -> Table:
    tol = plan.goals.tolerance
    table = Table(title=f"Balance (goal: every broker within +/-{tol:.0%} of its target: the "
                        "average, or where the rack rule forbids it, the best any placement "
                        "reaches)")
    headers = ["resource", *(["avg util"] if average else []), "max/avg",
               *(["min/avg"] if lowest else []), "off target", "balanced"]
    for header in headers:
        table.add_column(header, justify="right")
    for res in RESOURCES:
        b, a = plan.before.resource(res), plan.after.resource(res)
        table.add_row(
            _TITLES[res] + (" (forced)" if a.forced else ""),
            *([_arrow(f"{b.average:.1%}", f"{a.average:.1%}")] if average else []),
            f"{b.max_over_avg:.3f} -> {a.max_over_avg:.3f}",
            *([f"{b.min_over_avg:.3f} -> {a.min_over_avg:.3f}"] if lowest else []),
            f"{_percent(b.off_target)} -> {_percent(a.off_target)}",
            _arrow("yes" if b.within_tolerance else "no", "yes" if a.within_tolerance else "no"),
        )
    return table


def _percent(value: float) -> str:
    return "all" if value >= 1e5 else f"{value:.1%}"


def targets_text(plan: PlanFile) -> list[str]:
    """Why targets differ from the average (the rack rule, in the operator's words)."""
    if plan.targets is None or not plan.targets.reasons:
        return []
    return ["[bold]Targets[/]: the average is out of reach for some brokers:",
            *(f"  - {escape(reason)}" for reason in plan.targets.reasons)]


def describe_move(move: Move) -> str:
    """'1,3 -> 2,5' for data moves; 'leader 1 -> 3' when only the order changes."""
    if move.leadership_only:
        return f"leader {move.current[0]} -> {move.target[0]}"
    text = (f"{','.join(map(str, move.removed_brokers))} -> "
            f"{','.join(map(str, move.added_brokers))}")
    if move.current[0] != move.target[0]:
        text += f" (leader {move.current[0]} -> {move.target[0]})"
    return text


_LAST_ETA: list[tuple[PlanFile, float, PlanEta]] = []  # the review asks three times


def quota_window(plan: PlanFile) -> float:
    """The quota window a run of the plan will wait out: the longest the snapshot read on the
    brokers the moves copy between, else Kafka's default."""
    window = plan.quota_window_seconds()
    return DEFAULT_QUOTA_WINDOW_SECONDS if window is None else window


def review_eta(plan: PlanFile, rate_bytes_per_sec: float) -> PlanEta:
    """The plan timed at the rate under execute's defaults (executor.schedule)."""
    for seen, rate, eta in _LAST_ETA:
        if seen is plan and rate == rate_bytes_per_sec:
            return eta
    eta = plan_eta(plan.moves, rate_bytes_per_sec, quota_window(plan))
    _LAST_ETA[:] = [(plan, rate_bytes_per_sec, eta)]
    return eta


def moves_table(plan: PlanFile, show: int, rate_bytes_per_sec: float,
                width: int | None = None) -> Table:
    """The first `show` moves in execution order, each with the time from the start of the run
    until it is done ("done by", cumulative, one move at a time). Narrower than the full
    layout: without the replica lists (from -> to says what changes); a partition name is
    never cut."""
    return fit(width, [lambda: _moves_table(plan, show, rate_bytes_per_sec, True),
                        lambda: _moves_table(plan, show, rate_bytes_per_sec, False)])


def _moves_table(plan: PlanFile, show: int, rate_bytes_per_sec: float,
                 replicas: bool) -> Table:
    shown = min(show, len(plan.moves))
    table = Table(title=f"Moves in execution order (first {shown} of {len(plan.moves)}; "
                        "copied = partition size x replicas added; "
                        f"done by = time from the start of the run until the move is done, "
                        f"at {rate_text(rate_bytes_per_sec, compact=True)}, one at a time, about "
                        f"{DEFAULT_GAP_SECONDS:.0f} s of gate and election after each)")
    headers = ["#", "partition", *(["replicas"] if replicas else []), "from -> to", "copied",
               "done by"]
    for header in headers:
        table.add_column(header, justify="left" if header in ("partition", "from -> to")
                         else "right", overflow="fold")
    timeline = review_eta(plan, rate_bytes_per_sec).one_at_a_time
    for index, move in enumerate(plan.moves[:shown], start=1):
        table.add_row(str(index), escape(move.name),
                      *([f"{list(move.current)} -> {list(move.target)}"] if replicas else []),
                      describe_move(move), size_text(move.bytes_moved, compact=True),
                      "+" + duration_text(timeline.moves[index - 1].copy_end))
    return table


def eta_text(plan: PlanFile, rate_bytes_per_sec: float) -> str:
    """The ETA in words, one at a time and side by side; the gate can add more when the
    cluster is slow to settle."""
    eta = review_eta(plan, rate_bytes_per_sec)
    return (f"{duration_text(eta.one_at_a_time.eta_seconds)} one move at a time "
            f"({_one_at_a_time_parts(eta)}); "
            f"{duration_text(eta.side_by_side.eta_seconds)} with --concurrency auto "
            f"(no plan runs faster than {duration_text(eta.limit_seconds)} at this rate: "
            "the busiest broker's bytes)")


def _one_at_a_time_parts(eta: PlanEta) -> str:
    """What the one-at-a-time ETA is made of: start-up, copying, the waits between moves."""
    one = eta.one_at_a_time
    if one.eta_seconds <= 0:
        return "nothing to move"  # (a start-up in it read as 4 s making up 0 s)
    return (f"{duration_text(one.start_seconds)} start-up + "
            f"{duration_text(one.copy_seconds)} copying at {COPY_EFFICIENCY:.0%} of the rate + "
            f"{duration_text(eta.between_moves_seconds)} of gates and waits between moves")


def totals_table(plan: PlanFile, rate_bytes_per_sec: float, width: int | None = None) -> Table:
    """Bytes moved against the lower bound, move counts, the ETA one at a time and side by side
    (a row each) and the solver's account. Below WIDE the labels and notes are short, so each
    row is one line."""
    s = plan.solver
    compact = width is not None and width < WIDE
    table = Table(title="Totals", show_header=False)
    table.add_column("what")
    table.add_column("value", overflow="fold")
    ratio = (f"{plan.bytes_moved / s.lower_bound_bytes:.3f}" if s.lower_bound_bytes > 0
             else "-")
    if s.lower_bound_bytes > 0 and s.excess_over_bound is None:
        ratio += (" (short of balance: the bound does not apply)" if compact else
                  " (the plan stops short of balance, so the bound does not apply)")
    table.add_row("bytes moved", size_text(plan.bytes_moved, compact=True))
    table.add_row("lower bound" if compact else
                  "lower bound (disk and net in, to the balanced band)",
                  size_text(s.lower_bound_bytes, compact=True))
    if s.disk_lower_bound_bytes is not None:
        table.add_row("lower bound, disk", size_text(s.disk_lower_bound_bytes, compact=True))
    table.add_row("moved / lower bound", ratio)
    table.add_row("moves", f"{len(plan.moves)} ({plan.data_moves} copy data, "
                           f"{len(plan.moves) - plan.data_moves} leadership only)")
    eta = review_eta(plan, rate_bytes_per_sec)
    parts = (f"{duration_text(eta.between_moves_seconds)} of it between moves" if compact
             else _one_at_a_time_parts(eta))
    table.add_row("ETA, one at a time",
                  f"{duration_text(eta.one_at_a_time.eta_seconds)} ({parts})")
    table.add_row("ETA, concurrency auto", duration_text(eta.side_by_side.eta_seconds))
    table.add_row("no plan is faster than", f"{duration_text(eta.limit_seconds)} (the "
                  "busiest broker's bytes at this rate)")
    proof = ("" if s.proven_gap is None else
             f", within {s.proven_gap:.2%} of CP-SAT's proven bound" if s.proven_gap > 0 else
             ", proven by CP-SAT")
    table.add_row("solver", f"{s.status.value} ({SOLVER_MEANING[s.status]}){proof}, "
                            f"{s.seconds:.1f} s")
    return table


# What each solver status tells the operator, in the review's words.
SOLVER_MEANING = {
    SolverStatus.ALREADY_BALANCED: "nothing to move",
    SolverStatus.OPTIMAL: "the fewest bytes for the goals",
    SolverStatus.FEASIBLE: "every goal met; fewer bytes not ruled out",
    SolverStatus.GREEDY: "every goal met by the fast pass; no solver found fewer bytes",
    SolverStatus.BEST_EFFORT: "full balance not reached: the closest found",
    SolverStatus.LEADERS_ONLY: "leadership moved off the demoted brokers; no data moves",
}


def binding_text(plan: PlanFile) -> str | None:
    """Why full balance was not reached (a budget, a proof, or the time limit), or None."""
    if not plan.solver.binding and plan.solver.status is not SolverStatus.BEST_EFFORT:
        return None
    return ("[yellow]Full balance is not reached:[/] "
            + (escape("; ".join(plan.solver.binding)) or "see the Balance table"))


def shown_warnings(plan: PlanFile) -> list[str]:
    """The plan's warnings, less those that only restate, per resource, what the binding line
    already says (a resource left outside the tolerance)."""
    if not plan.solver.binding:
        return list(plan.warnings)
    restated = tuple(f"{r.value} is not within " for r in RESOURCES)
    return [w for w in plan.warnings if not w.startswith(restated)]


def spread_text(plan: PlanFile) -> str | None:
    """With --topic-spread: how many topics crowd a broker before and after the plan."""
    spread = plan.spread
    if spread is None:
        return None
    before, after = spread.before, spread.after
    left = f" ({after.replicas} replica(s), {after.leaders} leader(s))" if after.topics else ""
    return (f"Topic spread (each topic's fair share of a broker +{spread.tolerance:.0%}, rounded "
            f"up): {before.topics} topic(s) crowd a broker before the plan ({before.replicas} "
            f"replica(s) and {before.leaders} leader(s) above their caps), {after.topics} "
            f"after{left}")


def leaders_text(plan: PlanFile) -> str | None:
    """With --leader-balance: brokers outside their fair share of leaders before and after."""
    leaders = plan.leaders
    if leaders is None:
        return None
    before, after = leaders.before, leaders.after
    return (f"Leader balance (each broker's fair share of leaders and of produce bytes in, "
            f"+/-{leaders.tolerance:.0%}): {before.brokers_outside} broker(s) outside before the "
            f"plan, {after.brokers_outside} after; most leaders over the fair share "
            f"{before.count_over_fair:.2f}x -> {after.count_over_fair:.2f}x, most leader bytes "
            f"in {before.bytes_in_over_fair:.2f}x -> {after.bytes_in_over_fair:.2f}x (reached "
            "by reordering replicas: no byte copied for it)")


def requests_text(plan: PlanFile) -> str | None:
    """With --request-balance: brokers outside their fair share of requests before and after."""
    requests = plan.requests
    if requests is None:
        return None
    before, after = requests.before, requests.after
    if before.total_per_sec <= 0:
        return ("Request balance: the snapshot has no request rates, so there was nothing to "
                "level (a live snapshot with --prometheus reads them)")
    return (f"Request balance (each broker's fair share of {before.total_per_sec:,.0f} produce "
            f"and fetch requests a second, +/-{requests.tolerance:.0%}): "
            f"{before.brokers_outside} broker(s) outside before the plan, "
            f"{after.brokers_outside} after; the busiest broker {before.over_fair:.2f}x -> "
            f"{after.over_fair:.2f}x its fair share")


def requests_table(plan: PlanFile) -> Table | None:
    """With --request-balance: each broker's requests a second before -> after against its fair
    share, the brokers outside the band marked."""
    requests = plan.requests
    if requests is None or not requests.brokers:
        return None
    tol = requests.tolerance
    table = Table(title=f"Requests a second per broker (produce and fetch, served by the "
                        f"leaders; band: fair share +/-{tol:.0%}, or +/-1% of the broker's "
                        "request capacity when wider; * outside)")
    for header in ("broker", "before -> after", "fair share", "after / fair"):
        table.add_column(header, justify="right")
    for b in requests.brokers:
        ratio = b.after / b.fair if b.fair > 0 else math.inf
        shown = "-" if b.fair <= 0 else f"{ratio:.2f}" + (" *" if b.outside_after else "")
        table.add_row(str(b.id), _arrow(f"{b.before:,.0f}", f"{b.after:,.0f}"),
                      f"{b.fair:,.0f}", shown)
    return table


def tiered_text(plan: PlanFile) -> str | None:
    """With tiered storage: what stays in remote storage, and that moves copy local bytes."""
    tiered = plan.tiered
    if tiered is None:
        return None
    return (f"Tiered storage: {size_text(tiered.remote_bytes)} is in remote storage, "
            f"{size_text(tiered.moved_remote_bytes)} of it in partitions this plan copies; none "
            "of it is copied or fills a broker. Sizes, balance and the ETA count local bytes "
            f"only: {size_text(plan.bytes_moved)} to copy")


def log_dirs_text(plan: PlanFile, rate_bytes_per_sec: float) -> str | None:
    """With JBOD brokers: the dirs outside their share before and after, what arrives where
    and what moves between dirs (on the broker's own disks, not over the network; brokers
    copy side by side, each at the rate, once the partition moves are done)."""
    dirs = plan.log_dirs
    if dirs is None:
        return None
    per_broker: dict[int, int] = {}
    for move in dirs.moves:
        per_broker[move.broker] = per_broker.get(move.broker, 0) + move.size_bytes
    longest = max(per_broker.values(), default=0) / rate_bytes_per_sec
    moved = (f"{len(dirs.moves)} replica(s) move between dirs of their broker "
             f"({size_text(dirs.bytes_moved)} copied on the brokers' own disks, not over the "
             "network, under replica.alter.log.dirs.io.max.bytes.per.second: about "
             f"{duration_text(longest)} at {rate_text(rate_bytes_per_sec)} after the partition "
             "moves)" if dirs.moves else "no replica moves between dirs")
    return (f"Log dirs (JBOD): {dirs.before.outside} of {dirs.before.dirs} dir(s) outside "
            f"+/-{dirs.tolerance:.0%} of their broker's share before (worst "
            f"{dirs.before.worst:.0%} off), {dirs.after.outside} after (worst "
            f"{dirs.after.worst:.0%}); {len(dirs.placements)} arriving replica(s) are placed in "
            f"a chosen dir; {moved}")


def review(plan: PlanFile, show_moves: int, rate_bytes_per_sec: float,
           width: int | None = None) -> Group:
    """The whole dry-run review as one renderable, laid out for `width` columns (None: the
    full layout); the binding explanation comes once, last."""
    parts: list[Any] = [broker_table(plan, width), spread_table(plan, width)]
    if plan.moves and show_moves > 0:
        parts.append(moves_table(plan, show_moves, rate_bytes_per_sec, width))
    parts.append(totals_table(plan, rate_bytes_per_sec, width))
    per_broker = requests_table(plan)
    if per_broker is not None:
        parts.append(per_broker)
    parts.extend(targets_text(plan))
    if plan.goals.cordoned_brokers:
        parts.append(f"Cordoned (cordoned.log.dirs): broker(s) "
                     f"{sorted(plan.goals.cordoned_brokers)} get no new replica; they may "
                     "keep or give up what they hold")
    parts.extend(text for text in (spread_text(plan), leaders_text(plan), requests_text(plan),
                                   tiered_text(plan), log_dirs_text(plan, rate_bytes_per_sec))
                 if text is not None)
    parts.extend(f"[yellow]warning:[/] {escape(w)}" for w in shown_warnings(plan))
    binding = binding_text(plan)
    if binding is not None:
        parts.append(binding)
    return Group(*parts)


REVIEW_FORMAT = "kafka-rebalance.plan-review"
REVIEW_VERSION = 1  # raised only when a key changes meaning or goes away; new keys may appear


def _finite(value: float | None) -> float | None:
    """JSON has no infinity or NaN: such a number becomes null."""
    return value if value is not None and math.isfinite(value) else None


def _broker_state(stats: BrokerStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {"replicas": stats.replicas, "leaders": stats.leaders,
            "utilization": {r.value: _finite(stats.utilization(r)) for r in RESOURCES},
            "load": {r.value: stats.load.of(r) for r in RESOURCES}}


def _role_value(plan: PlanFile, broker: BrokerStats) -> str | None:
    role = broker_role(plan, broker)
    return None if role is None else role.value


def _brokers_document(plan: PlanFile) -> list[dict[str, Any]]:
    after = {b.id: b for b in plan.after.brokers}
    rows = []
    for b in sorted(plan.before.brokers, key=lambda b: b.id):
        targets = None
        if plan.targets is not None and any(plan.targets.forced):
            targets = {r.value: plan.targets.of(b.id, r) for r in RESOURCES}
        rows.append({"id": b.id, "rack": b.rack, "alive": b.alive, "role": _role_value(plan, b),
                     "before": _broker_state(b), "after": _broker_state(after.get(b.id)),
                     "target_utilization": targets})
    return rows


def _resources_document(plan: PlanFile) -> dict[str, Any]:
    doc = {}
    for r in RESOURCES:
        b, a = plan.before.resource(r), plan.after.resource(r)
        doc[r.value] = {
            "average_utilization_before": b.average, "average_utilization_after": a.average,
            "max_over_avg_before": b.max_over_avg, "max_over_avg_after": a.max_over_avg,
            "min_over_avg_before": b.min_over_avg, "min_over_avg_after": a.min_over_avg,
            "off_target_before": _finite(b.off_target), "off_target_after": _finite(a.off_target),
            "balanced_before": b.within_tolerance, "balanced_after": a.within_tolerance,
            "forced": a.forced}
    return doc


def _moves_document(plan: PlanFile, eta: PlanEta) -> list[dict[str, Any]]:
    done_by = [slot.copy_end for slot in eta.one_at_a_time.moves]
    return [{"order": index, "topic": m.topic, "partition": m.partition,
             "current_replicas": list(m.current), "target_replicas": list(m.target),
             "added_brokers": list(m.added_brokers), "removed_brokers": list(m.removed_brokers),
             "leadership_only": m.leadership_only, "bytes": m.bytes_moved,
             "done_by_seconds": done_by[index - 1]}
            for index, m in enumerate(plan.moves, start=1)]


def review_document(plan: PlanFile, rate_bytes_per_sec: float) -> dict[str, Any]:
    """The review as one JSON document for --json (`plan` and `diff`): goals, every broker
    before and after, every move with its bytes and finish time, totals, the ETA, warnings.
    Keys are stable within REVIEW_VERSION; utilizations are fractions (0.5 is 50%)."""
    s = plan.solver
    eta = review_eta(plan, rate_bytes_per_sec)
    copying, waits = eta.one_at_a_time.copy_seconds, eta.between_moves_seconds
    g, budget = plan.goals, plan.budget
    return {
        "format": REVIEW_FORMAT, "version": REVIEW_VERSION,
        "created_at": plan.created_at, "fingerprint": plan.fingerprint,
        "goals": {"tolerance": g.tolerance, "max_utilization": g.max_utilization,
                  "add_brokers": sorted(g.add_brokers),
                  "remove_brokers": sorted(g.remove_brokers),
                  "rack_aware": g.rack_aware, "balance_leaders": g.balance_leaders,
                  "cordoned_brokers": sorted(g.cordoned_brokers),
                  "topic_spread": g.topic_spread, "leader_balance": g.leader_balance,
                  "request_balance": g.request_balance},
        **({"topic_spread": {when: {"topics_crowding": c.topics, "replicas_over": c.replicas,
                                    "leaders_over": c.leaders}
                             for when, c in (("before", plan.spread.before),
                                             ("after", plan.spread.after))}}
           if plan.spread is not None else {}),
        **({"leader_balance": {when: {"brokers_outside": level.brokers_outside,
                                      "count_over_fair": level.count_over_fair,
                                      "bytes_in_over_fair": level.bytes_in_over_fair}
                               for when, level in (("before", plan.leaders.before),
                                                   ("after", plan.leaders.after))}}
           if plan.leaders is not None else {}),
        **({"request_balance": requests_to_dict(plan.requests)}
           if plan.requests is not None else {}),
        **({"tiered_storage": {"remote_bytes": plan.tiered.remote_bytes,
                               "moved_remote_bytes": plan.tiered.moved_remote_bytes}}
           if plan.tiered is not None else {}),
        **({"log_dirs": log_dirs_to_dict(plan.log_dirs)} if plan.log_dirs is not None else {}),
        "budget": {"max_bytes": budget.max_bytes, "max_moves": budget.max_moves,
                   "time_limit_seconds": budget.time_limit_s},
        "solver": {"status": s.status.value, "seconds": s.seconds,
                   "gap": _finite(s.excess_over_bound),  # the key keeps its published name
                   "proven_gap": _finite(s.proven_gap), "binding": list(s.binding),
                   "phases": dict(s.phase_seconds)},
        "brokers": _brokers_document(plan),
        "resources": _resources_document(plan),
        "moves": _moves_document(plan, eta),
        "totals": {
            "moves": len(plan.moves), "data_moves": plan.data_moves,
            "leadership_moves": len(plan.moves) - plan.data_moves,
            "bytes_moved": plan.bytes_moved, "lower_bound_bytes": s.lower_bound_bytes,
            "disk_lower_bound_bytes": s.disk_lower_bound_bytes,
            "moved_over_lower_bound": (plan.bytes_moved / s.lower_bound_bytes
                                       if s.lower_bound_bytes > 0 else None),
            "balanced": all(r.within_tolerance for r in plan.after.resources)},
        "eta": {"rate_bytes_per_sec": rate_bytes_per_sec,
                "quota_window_seconds": quota_window(plan),
                "gap_seconds": DEFAULT_GAP_SECONDS,
                "start_seconds": eta.one_at_a_time.start_seconds,
                "copy_efficiency": COPY_EFFICIENCY,
                "copying_seconds": copying, "waiting_seconds": waits,
                "total_seconds": eta.one_at_a_time.eta_seconds,
                "concurrency_auto_seconds": eta.side_by_side.eta_seconds,
                "physical_limit_seconds": eta.limit_seconds},
        "target_reasons": list(plan.targets.reasons) if plan.targets else [],
        "warnings": list(plan.warnings),
    }
