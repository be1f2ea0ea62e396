"""Is a rebalance due? The planner's own validator judges the cluster as it stands.

The current placement is validated as an empty plan (`validate_plan(topology, (), goals)`, the
check `build_plan` makes before it solves): its hard violations (replicas on dead brokers, a
rack holding too many replicas of a partition, a broker over the utilization cap) and its
per-resource balance against the tolerance band of the load model. The per-broker detail in
the reasons comes from the same load model (`topology.load.balance`).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.arrays import to_arrays
from planner.goals import Goals
from planner.leader_balance import leader_level
from planner.log_dirs import plan_dirs
from planner.requests import request_level
from planner.validate import ResourceReport, validate_plan
from topology.load import ResourceBalance, balance
from topology.model import Topology

_MAX_REASONS = 10
_MAX_BROKERS = 5


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a rebalance is due, and why (one human-readable line per finding);
    `hard_violations` counts the current placement's hard-goal violations."""

    due: bool
    reasons: tuple[str, ...]
    hard_violations: int = 0
    waiting: str = ""  # not due yet for this reason (a broker offline inside its grace period)

    def summary(self) -> str:
        if self.waiting:
            return "waiting: " + self.waiting
        if not self.due:
            return "balanced: " + "; ".join(self.reasons)
        return "rebalance due: " + "; ".join(self.reasons)


def imbalance_verdict(topology: Topology, goals: Goals) -> Verdict:
    """A rebalance is due when the current placement breaks a hard goal or some resource's
    utilization lies outside avg * (1 +/- tolerance) on some broker."""
    report = validate_plan(topology, (), goals)
    reasons = list(report.errors[:_MAX_REASONS])
    if len(report.errors) > _MAX_REASONS:
        reasons.append(f"... and {len(report.errors) - _MAX_REASONS} more hard-goal violations")
    loads = balance(topology)
    outside = [r for r in report.resources if not r.within_tolerance_before]
    reasons.extend(_spread_reason(r, loads[r.resource]) for r in outside)
    reasons.extend(r for r in (_leader_reason(topology, goals), _request_reason(topology, goals),
                               _dirs_reason(topology, goals)) if r)
    if reasons:
        return Verdict(True, tuple(reasons), len(report.errors))
    level = (f"; leaders within +/-{goals.leader_balance:.0%} of their fair shares"
             if goals.leader_balance is not None else "")
    level += (f"; requests within +/-{goals.request_balance:.0%} of their fair shares"
              if goals.request_balance is not None else "")
    return Verdict(False, (f"every resource within +/-{goals.tolerance:.0%} of the average "
                           f"and every hard goal met{level}",))


def _leader_reason(topology: Topology, goals: Goals) -> str | None:
    """With --leader-balance: the brokers off their fair share of leaders, if any."""
    if goals.leader_balance is None:
        return None
    arrays = to_arrays(topology, goals)
    level = leader_level(arrays, arrays.replicas, goals.leader_balance)
    if not level.brokers_outside:
        return None
    return (f"leaders: {level.brokers_outside} broker(s) off their fair share of leaders or "
            f"produce bytes by more than +/-{goals.leader_balance:.0%} (most leaders "
            f"{level.count_over_fair:.2f}x the fair share, most leader bytes in "
            f"{level.bytes_in_over_fair:.2f}x)")


def _request_reason(topology: Topology, goals: Goals) -> str | None:
    """With --request-balance: the brokers off their fair share of requests, if any."""
    if goals.request_balance is None:
        return None
    arrays = to_arrays(topology, goals)
    level = request_level(arrays, arrays.replicas, goals.request_balance)
    if not level.brokers_outside:
        return None
    return (f"requests: {level.brokers_outside} broker(s) off their fair share of produce and "
            f"fetch requests by more than +/-{goals.request_balance:.0%} (the busiest "
            f"{level.over_fair:.2f}x its fair share)")


def _dirs_reason(topology: Topology, goals: Goals) -> str | None:
    """JBOD brokers whose log dirs lie outside +/-tolerance of their share, if any."""
    spread = plan_dirs(topology, (), goals.tolerance, move_between_dirs=False).before
    if not spread.outside:
        return None
    return (f"log dirs: {spread.outside} of {spread.dirs} dir(s) of JBOD brokers off their "
            f"share of their broker's bytes by more than +/-{goals.tolerance:.0%} (worst "
            f"{spread.worst:.0%})")


def _spread_reason(report: ResourceReport, detail: ResourceBalance) -> str:
    """E.g. "disk: max/avg 1.25, min/avg 0.00 outside +/-10% (broker 5 at 0.00x the average)".

    Brokers are shown relative to the average: without a capacities file every broker has the
    same nominal capacity and absolute utilization means nothing."""
    if report.forced:
        return (f"{report.resource.value}: a broker is {report.deviation_before:.1%} off its "
                f"target, outside +/-{report.tolerance:.0%} (the rack rule keeps the targets "
                "off the average; `rebalance plan` shows them)")
    average = report.average_before
    low, high = average * (1 - report.tolerance), average * (1 + report.tolerance)
    brokers = sorted(b for b, u in detail.utilization.items() if not low <= u <= high)
    shown = ", ".join(f"broker {b} at {detail.utilization[b] / average:.2f}x"
                      for b in brokers[:_MAX_BROKERS])
    more = f" and {len(brokers) - _MAX_BROKERS} more" if len(brokers) > _MAX_BROKERS else ""
    return (f"{report.resource.value}: max/avg {report.max_over_avg_before:.2f}, min/avg "
            f"{report.min_over_avg_before:.2f} outside +/-{report.tolerance:.0%} ({shown}{more} "
            "the average)")
