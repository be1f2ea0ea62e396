"""The dry-run review of a plan: per-broker before/after, spread, first moves, totals.

Everything renders from a PlanFile, so `plan` and `diff` show the same review.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table

from commands.render import human_bytes
from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS
from planner.result import Move
from topology.model import RESOURCES, Resource

if TYPE_CHECKING:
    from planner.planfile import BrokerStats, PlanFile

_TITLES = {Resource.DISK: "disk", Resource.NET_IN: "net in", Resource.NET_OUT: "net out"}


def human_duration(seconds: float) -> str:
    """3725 -> '1h02m05s'."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _arrow(before: str, after: str) -> str:
    return before if before == after else f"{before} -> {after}"


def _util(stats: BrokerStats | None, res: Resource) -> str:
    return "-" if stats is None else f"{stats.utilization(res):.1%}"


def _with_target(plan: PlanFile, broker_id: int, res: Resource, text: str) -> str:
    """'text (43%)' where the hard rules force this resource off the average."""
    targets = plan.targets
    if targets is None or not targets.forced[RESOURCES.index(res)]:
        return text
    target = targets.of(broker_id, res)
    return text if target is None else f"{text} ({target:.0%})"


def broker_table(plan: PlanFile) -> Table:
    """One row per broker: rack, replicas, leaders and utilization per resource, before -> after
    (and the target in brackets where the rack rule keeps it off the average)."""
    after = {b.id: b for b in plan.after.brokers}
    forced = plan.targets is not None and any(plan.targets.forced)
    title = "Brokers (before -> after" + (", target in brackets)" if forced else ")")
    table = Table(title=title)
    for header in ("rack", "broker", "replicas", "leaders", *(_TITLES[r] for r in RESOURCES)):
        table.add_column(header, justify="left" if header == "rack" else "right")
    rows = sorted(plan.before.brokers, key=lambda b: (b.rack is not None, b.rack or "", b.id))
    for b in rows:
        a = after.get(b.id)
        tag = (" (new)" if b.id in plan.goals.add_brokers else
               " (removed)" if b.id in plan.goals.remove_brokers else
               "" if b.alive else " (offline)")
        table.add_row(
            escape(str(b.rack)), f"{b.id}{tag}",
            _arrow(str(b.replicas), str(a.replicas if a else "-")),
            _arrow(str(b.leaders), str(a.leaders if a else "-")),
            *(_with_target(plan, b.id, r, _arrow(_util(b, r), _util(a, r))) for r in RESOURCES),
        )
    return table


def spread_table(plan: PlanFile) -> Table:
    """Per resource: average utilization, max/avg and min/avg before -> after, the farthest
    broker's distance from its target, and whether every broker is within tolerance."""
    tol = plan.goals.tolerance
    table = Table(title=f"Balance (goal: every broker within +/-{tol:.0%} of its target: the "
                        "average, or where the rack rule forbids it, the best any placement "
                        "reaches)")
    for header in ("resource", "avg util", "max/avg", "min/avg", "off target", "balanced"):
        table.add_column(header, justify="right")
    for res in RESOURCES:
        b, a = plan.before.resource(res), plan.after.resource(res)
        table.add_row(
            _TITLES[res] + (" (forced)" if a.forced else ""),
            _arrow(f"{b.average:.1%}", f"{a.average:.1%}"),
            f"{b.max_over_avg:.3f} -> {a.max_over_avg:.3f}",
            f"{b.min_over_avg:.3f} -> {a.min_over_avg:.3f}",
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


def moves_table(plan: PlanFile, show: int, rate_bytes_per_sec: float) -> Table:
    """The first `show` moves in execution order with their cumulative ETA: one at a time at the
    given rate, with execute's default quota-window wait after each move that copies data."""
    shown = min(show, len(plan.moves))
    table = Table(title=f"Moves in execution order (first {shown} of {len(plan.moves)}, "
                        f"ETA at {human_bytes(rate_bytes_per_sec, 'B/s')}, one at a time, "
                        f"{DEFAULT_QUOTA_WINDOW_SECONDS:.0f} s between moves)")
    for header in ("#", "partition", "replicas", "from -> to", "bytes", "ETA"):
        table.add_column(header, justify="left" if header in ("partition", "from -> to")
                         else "right")
    elapsed = 0.0
    for index, move in enumerate(plan.moves[:shown], start=1):
        if index > 1 and plan.moves[index - 2].bytes_moved:
            elapsed += DEFAULT_QUOTA_WINDOW_SECONDS
        elapsed += move.bytes_moved / rate_bytes_per_sec
        table.add_row(str(index), escape(move.name),
                      f"{list(move.current)} -> {list(move.target)}", describe_move(move),
                      human_bytes(move.bytes_moved), human_duration(elapsed))
    return table


def eta_text(plan: PlanFile, rate_bytes_per_sec: float) -> str:
    """Copy time at the rate plus the quota-window waits between moves (execute's defaults,
    one move at a time); the gate can add more when the cluster is slow to settle."""
    copying = plan.bytes_moved / rate_bytes_per_sec
    waits = sum(1 for m in plan.moves[:-1] if m.bytes_moved) * DEFAULT_QUOTA_WINDOW_SECONDS
    return (f"{human_duration(copying + waits)} ({human_duration(copying)} copying + "
            f"{human_duration(waits)} of quota-window waits between moves)")


def totals_table(plan: PlanFile, rate_bytes_per_sec: float) -> Table:
    """Bytes moved against the lower bound, move counts, ETA and the solver's account."""
    s = plan.solver
    table = Table(title="Totals", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    ratio = (f"{plan.bytes_moved / s.lower_bound_bytes:.3f}" if s.lower_bound_bytes > 0
             else "-")
    if s.lower_bound_bytes > 0 and s.gap is None:
        ratio += " (the plan stops short of the aimed band, so the bound does not apply)"
    table.add_row("bytes moved", human_bytes(plan.bytes_moved))
    table.add_row("lower bound (disk and net in into the aimed band)",
                  human_bytes(s.lower_bound_bytes))
    if s.disk_lower_bound_bytes is not None:
        table.add_row("lower bound, disk alone", human_bytes(s.disk_lower_bound_bytes))
    table.add_row("moved / lower bound", ratio)
    table.add_row("moves", f"{len(plan.moves)} ({plan.data_moves} copy data, "
                           f"{len(plan.moves) - plan.data_moves} leadership only)")
    table.add_row("ETA", eta_text(plan, rate_bytes_per_sec))
    proof = ("" if s.proven_gap is None else
             f", within {s.proven_gap:.2%} of CP-SAT's proven bound" if s.proven_gap > 0 else
             ", proven by CP-SAT")
    table.add_row("solver", f"{s.status.value}{proof}, {s.seconds:.1f} s")
    table.add_row("binding", escape("; ".join(s.binding)) if s.binding else "none")
    return table


def review(plan: PlanFile, show_moves: int, rate_bytes_per_sec: float) -> Group:
    """The whole dry-run review as one renderable."""
    parts: list[Any] = [broker_table(plan), spread_table(plan)]
    if plan.moves and show_moves > 0:
        parts.append(moves_table(plan, show_moves, rate_bytes_per_sec))
    parts.append(totals_table(plan, rate_bytes_per_sec))
    parts.extend(targets_text(plan))
    parts.extend(f"[yellow]warning:[/] {escape(w)}" for w in plan.warnings)
    return Group(*parts)


def summary(plan: PlanFile) -> dict[str, Any]:
    """A machine-readable summary for --json."""
    s = plan.solver
    return {
        "fingerprint": plan.fingerprint,
        "moves": len(plan.moves),
        "data_moves": plan.data_moves,
        "bytes_moved": plan.bytes_moved,
        "lower_bound_bytes": s.lower_bound_bytes,
        "disk_lower_bound_bytes": s.disk_lower_bound_bytes,
        "status": s.status.value,
        "gap": s.gap,
        "proven_gap": s.proven_gap,
        "binding": list(s.binding),
        "seconds": s.seconds,
        "balanced": all(r.within_tolerance for r in plan.after.resources),
        "resources": {r.resource.value: {
            "max_over_avg_before": plan.before.resource(r.resource).max_over_avg,
            "min_over_avg_before": plan.before.resource(r.resource).min_over_avg,
            "max_over_avg_after": r.max_over_avg, "min_over_avg_after": r.min_over_avg,
            "off_target_before": plan.before.resource(r.resource).off_target,
            "off_target_after": r.off_target, "forced": r.forced,
        } for r in plan.after.resources},
        "target_reasons": list(plan.targets.reasons) if plan.targets else [],
        "warnings": list(plan.warnings),
    }
