"""Is a planned run worth its bytes? Pure: the plan file's before/after statistics and the
number of hard-goal violations before and after the plan come in, a verdict goes out.

A cluster the planner cannot bring within the tolerance (racks, a budget, one huge partition)
stays "due" window after window; without this rule every window would plan and copy more data
for a balance that hardly changes. A run is worth it when it
- fixes a hard-goal violation (rack rule, replicas on offline or removed brokers, a broker over
  the utilization cap), or
- brings a resource that is outside the tolerance band back inside it, or
- moves the worst broker of such a resource closer to the average by at least
  `min_improvement` (a fraction of the average, like the tolerance):
      deviation = the largest |utilization / target - 1| over the brokers (planner.balance:
      the target is the average unless the rack rule forbids it),
      improvement = deviation before - after, or
- with --leader-balance, leaves fewer brokers off their fair share of leaders (its leadership
  moves copy nothing).
Resources already inside the band do not count: they did not make the run due.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_rebalance.core.errors import InputError
from planner.planfile import PlanFile, ResourceStats
from topology.load import ROUNDING_SLACK, within_tolerance
from topology.model import RESOURCES, Resource
from topology.units import size_text

DEFAULT_MIN_IMPROVEMENT = 0.02


def deviation(stats: ResourceStats) -> float:
    """How far the farthest broker lies from its target (the average where the hard rules
    allow it), as a fraction of the target."""
    return stats.off_target


@dataclass(frozen=True, slots=True)
class Gain:
    """One resource's worst-broker deviation before and after the plan."""

    resource: Resource
    before: float
    after: float
    tolerance: float

    @property
    def improvement(self) -> float:
        return self.before - self.after

    @property
    def outside_before(self) -> bool:
        return not within_tolerance(self.before, self.tolerance)

    @property
    def reaches_band(self) -> bool:
        return self.outside_before and within_tolerance(self.after, self.tolerance)

    def describe(self) -> str:
        return (f"{self.resource.value}: worst broker {self.before:.1%} -> {self.after:.1%} "
                f"from its target ({self.improvement * 100:+.1f} points)")


@dataclass(frozen=True, slots=True)
class Worth:
    """Whether to execute the plan, and why (with the numbers)."""

    worth: bool
    reason: str


def gains(plan: PlanFile) -> tuple[Gain, ...]:
    """Per-resource deviation before and after, from the plan file's statistics."""
    tolerance = plan.goals.tolerance
    return tuple(Gain(res, deviation(plan.before.resource(res)),
                      deviation(plan.after.resource(res)), tolerance) for res in RESOURCES)


def judge_plan(plan: PlanFile, hard_before: int, hard_after: int,
               min_improvement: float = DEFAULT_MIN_IMPROVEMENT) -> Worth:
    """Execute `plan` only when it fixes a hard violation or improves an unbalanced resource
    enough (see the module docstring)."""
    if not 0 <= min_improvement < 1:
        raise InputError(f"--min-improvement must be in [0, 1), got {min_improvement}")
    size = (f"{len(plan.moves)} move(s), {size_text(plan.bytes_moved)} "
            f"({plan.solver.status.value})")
    if hard_after < hard_before:
        return Worth(True, f"fixes {hard_before - hard_after} of {hard_before} hard-goal "
                           f"violation(s); {size}")
    outside = [g for g in gains(plan) if g.outside_before]
    shown = "; ".join(g.describe() for g in outside)
    reaching = [g for g in outside if g.reaches_band]
    if reaching:
        names = ", ".join(g.resource.value for g in reaching)
        return Worth(True, f"brings {names} within +/-{plan.goals.tolerance:.0%}: {shown}; "
                           f"{size}")
    enough = [g for g in outside
              if g.improvement > ROUNDING_SLACK
              and g.improvement >= min_improvement - ROUNDING_SLACK]
    if enough:
        return Worth(True, f"{shown} (at least {min_improvement * 100:.1f} points); {size}")
    leaders = plan.leaders
    if leaders is not None and leaders.after.brokers_outside < leaders.before.brokers_outside:
        return Worth(True, f"levels leaders (--leader-balance): {leaders.before.brokers_outside}"
                           f" -> {leaders.after.brokers_outside} broker(s) off their fair "
                           f"share; {size}")
    requests = plan.requests
    if requests is not None and requests.after.brokers_outside < requests.before.brokers_outside:
        return Worth(True, f"levels requests (--request-balance): "
                           f"{requests.before.brokers_outside} -> "
                           f"{requests.after.brokers_outside} broker(s) off their fair share; "
                           f"{size}")
    dirs = plan.log_dirs
    if dirs is not None and dirs.moves and dirs.after.outside < dirs.before.outside:
        return Worth(True, f"levels log dirs: {dirs.before.outside} -> {dirs.after.outside} "
                           f"dir(s) off their share by {len(dirs.moves)} move(s) between dirs; "
                           f"{size}")
    fixed = (f"none of {hard_before} hard-goal violation(s) fixed" if hard_before
             else "no hard-goal violation")
    if not outside:
        return Worth(False, f"no resource outside +/-{plan.goals.tolerance:.0%} and {fixed}; "
                            f"{size}")
    return Worth(False, f"{shown}: less than --min-improvement {min_improvement * 100:.1f} "
                        f"points, and {fixed}; {size}")
