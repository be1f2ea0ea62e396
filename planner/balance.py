"""The one meaning of "balanced": averages, achievable targets and the tolerance bands.

Utilization is load / capacity under the load model of DESIGN.md; the average is
capacity-weighted over the brokers that may hold replicas (alive, not removed). When the hard
rules allow it, every such broker can sit at the average and "balanced" means within
avg * (1 +/- tolerance). When they do not (three zones, RF 3 and a zone with fewer or more
brokers than the others: each zone holds one replica of every partition), the target of each
broker is the best any placement can reach: the lexicographic min-max of utilization over the
fractional relaxation (fullest broker as low as possible, then the next, ...), computed per
resource with an LP (OR-Tools GLOP). Balanced then means within target * (1 +/- tolerance).

The relaxation aggregates partitions into classes of equal replication factor and rack limit:
for one additive resource the class totals carry all the LP needs (every partition of a class
has the same constraints), so the LP has (classes x brokers) variables however many partitions
there are. Leadership is the leader-out resource with one "replica" per partition that any
broker may hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.linear_solver import pywraplp

from kafka_rebalance.core.errors import PlanError
from planner.arrays import (
    DISK,
    NET_OUT,
    BoolArray,
    ClusterArrays,
    FloatArray,
    IntArray,
    broker_loads,
)
from planner.goals import Goals

RESOURCE_NAMES = ("disk", "net in", "net out")
SLACK_PROBE = 1e-3  # relative utilization a broker must be able to drop to count as not tight
MAX_LEVELS = 24  # lexicographic levels solved exactly; later brokers keep the LP's values
WORSE_MARGIN = 1e-6  # a deviation from target grows ("gets worse") only beyond this: float
# sums of the solver and the validator differ by less
_EPS = 1e-9
_NO_TARGET = 1e6  # deviation of a broker holding load where its target is none (finite: JSON)


@dataclass(frozen=True)
class Targets:
    """Per broker (position as in ClusterArrays) and resource: the target utilization.

    `average`: capacity-weighted average utilization per resource over eligible brokers.
    `forced`: per resource, True when the hard rules keep some broker outside the tolerance
    band around the average, so the band is around each broker's target instead.
    `reasons`: what forces the targets, in the operator's words.
    """

    average: FloatArray  # [3]
    utilization: FloatArray  # [B, 3]; 0 for brokers that must end empty
    forced: tuple[bool, bool, bool]
    reasons: tuple[str, ...]

    def relative(self) -> FloatArray:
        """Target utilization / average, per broker and resource (1 where unforced)."""
        out: FloatArray = self.utilization / np.where(self.average > 0, self.average, 1.0)
        return out


def averages(arrays: ClusterArrays, loads: FloatArray) -> FloatArray:
    """Capacity-weighted average utilization per resource over the eligible brokers."""
    if not arrays.eligible.any():
        raise PlanError("no broker remains to hold replicas: every broker is removed or offline")
    avg: FloatArray = loads.sum(axis=0) / arrays.capacity[arrays.eligible].sum(axis=0)
    return avg


def _totals(arrays: ClusterArrays) -> FloatArray:
    """Total load per resource, whatever the placement."""
    return np.array([float((arrays.size * arrays.rf).sum()),
                     float((arrays.net_in * arrays.rf).sum()), float(arrays.leader_out.sum())])


def _classes(arrays: ClusterArrays, resource: int) -> tuple[IntArray, IntArray, FloatArray]:
    """(replicas per partition, most per rack, share of the resource's total) per class."""
    if resource == NET_OUT:
        return np.array([1]), np.array([1]), np.array([1.0])
    values = arrays.size if resource == DISK else arrays.net_in
    mass = values * arrays.rf
    total = float(mass.sum())
    keys = arrays.rf * (int(arrays.rf.max()) + 1) + arrays.rack_limit
    uniq, inverse = np.unique(keys, return_inverse=True)
    share = np.bincount(inverse, weights=values, minlength=uniq.size) / total
    first = np.array([int(np.flatnonzero(inverse == c)[0]) for c in range(uniq.size)])
    return arrays.rf[first], arrays.rack_limit[first], share


class _LevelModel:
    """The relaxation for one resource: x[c, b] = replicas of class c per partition on broker
    b (0..1), so broker b carries sum_c share[c] * x[c, b] of the total; utilization relative
    to the average is that load over the broker's share of capacity."""

    def __init__(self, arrays: ClusterArrays, resource: int, cap_rel: float) -> None:
        self.arrays = arrays
        self.rf, self.limit, self.share = _classes(arrays, resource)
        cap = arrays.capacity[:, resource] * arrays.eligible
        self.unit = cap / cap.sum()  # a broker at the average carries this share of the total
        self.brokers = np.flatnonzero(arrays.eligible).tolist()
        self.cap_rel = cap_rel
        self.rack_rule = resource != NET_OUT and arrays.rack_count > 0
        # a cordoned broker takes no new replica: it can only keep or lose load (its relative
        # load now is its ceiling); leadership (net out) may still move onto it
        self.ceiling: dict[int, float] = {}
        if arrays.cordoned is not None and resource != NET_OUT:
            now = broker_loads(arrays, arrays.replicas)[:, resource]
            total = float(now.sum())
            if total > 0:
                self.ceiling = {b: float(now[b]) / total / self.unit[b] for b in self.brokers
                                if arrays.cordoned[b] and self.unit[b] > 0}

    def _base(self) -> tuple[pywraplp.Solver, dict[int, pywraplp.LinearExpr]]:
        solver = pywraplp.Solver.CreateSolver("GLOP")
        a = self.arrays
        x = {(c, b): solver.NumVar(0.0, 1.0, "") for c in range(self.rf.size)
             for b in self.brokers}
        for c in range(self.rf.size):
            solver.Add(solver.Sum([x[c, b] for b in self.brokers]) == float(self.rf[c]))
            if self.rack_rule:
                for rack in sorted({int(a.rack[b]) for b in self.brokers}):
                    members = [x[c, b] for b in self.brokers if a.rack[b] == rack]
                    if len(members) > self.limit[c]:
                        solver.Add(solver.Sum(members) <= float(self.limit[c]))
        rel = {b: solver.Sum([float(self.share[c]) / self.unit[b] * x[c, b]
                              for c in range(self.rf.size)]) for b in self.brokers}
        for b in self.brokers:
            solver.Add(rel[b] <= min(self.cap_rel, self.ceiling.get(b, self.cap_rel) + _EPS))
        return solver, rel

    def _solve(self, solver: pywraplp.Solver) -> bool:
        return bool(solver.Solve() == pywraplp.Solver.OPTIMAL)

    def levels(self) -> dict[int, float] | None:
        """Lexicographic min-max utilization (relative to the average) per eligible broker,
        or None when no fractional placement keeps every broker under the cap (with cordoned
        brokers held to their load now where that leaves a placement, else without)."""
        found = self._levels()
        if found is None and self.ceiling:
            self.ceiling = {}
            found = self._levels()
        return found

    def _levels(self) -> dict[int, float] | None:
        fixed: dict[int, float] = {}
        free = list(self.brokers)
        last: dict[int, float] = {}
        for _ in range(MAX_LEVELS):
            if not free:
                return fixed
            solver, rel = self._base()
            t = solver.NumVar(0.0, solver.infinity(), "t")
            for b in free:
                solver.Add(rel[b] <= t)
            for b, level in fixed.items():
                solver.Add(rel[b] <= level + _EPS)
            solver.Minimize(t)
            if not self._solve(solver):
                return None if not fixed else {**fixed, **{b: last[b] for b in free}}
            level = t.solution_value()
            last = {b: rel[b].solution_value() for b in self.brokers}
            tight = self._tight(free, fixed, level)
            fixed.update({b: level for b in tight})
            free = [b for b in free if b not in tight]
        return {**fixed, **{b: last[b] for b in free}}

    def _tight(self, free: list[int], fixed: dict[int, float], level: float) -> set[int]:
        """The free brokers that cannot drop below `level` while the others stay at most
        there: maximize each broker's room (capped at SLACK_PROBE); no room means tight."""
        solver, rel = self._base()
        room = {b: solver.NumVar(0.0, SLACK_PROBE, "") for b in free}
        for b in free:
            solver.Add(rel[b] + room[b] <= level + _EPS)
        for b, value in fixed.items():
            solver.Add(rel[b] <= value + _EPS)
        solver.Maximize(solver.Sum(list(room.values())))
        if not self._solve(solver):
            return set(free)
        tight = {b for b in free if room[b].solution_value() < SLACK_PROBE / 2}
        return tight or set(free)


def achievable_targets(arrays: ClusterArrays, goals: Goals) -> Targets:
    """The targets of every broker and resource (see the module docstring)."""
    totals = _totals(arrays)
    capacity = arrays.capacity
    cap_total = capacity[arrays.eligible].sum(axis=0) if arrays.eligible.any() else None
    if cap_total is None:
        raise PlanError("no broker remains to hold replicas: every broker is removed or offline")
    average: FloatArray = totals / cap_total
    relative = np.zeros((arrays.brokers, 3))
    forced = [False, False, False]
    for r in range(3):
        if average[r] <= 0:
            continue
        if average[r] > goals.max_utilization:
            raise PlanError(_too_full(r, float(average[r]), goals))
        levels = _LevelModel(arrays, r, goals.max_utilization / average[r]).levels()
        if levels is None:
            overflow = _rack_overflow(arrays, r, goals.max_utilization)
            cause, fix = ((overflow, "add brokers to that rack, or remove fewer from it")
                          if overflow else
                          ("the rack rule and replication factor force too much onto some "
                           "brokers", "add brokers or raise --max-utilization"))
            raise PlanError(f"no placement keeps every broker's {RESOURCE_NAMES[r]} under the "
                            f"{goals.max_utilization:.0%} maximum ({cause}); {fix}")
        column = np.zeros(arrays.brokers)
        for b, level in levels.items():
            column[b] = level
        eligible = column[arrays.eligible]
        if np.all(np.abs(eligible - 1.0) <= goals.tolerance + _EPS):
            column = np.where(arrays.eligible, 1.0, 0.0)  # the usual band is reachable
        else:
            forced[r] = True
        relative[:, r] = column
    utilization: FloatArray = relative * average[None, :]
    reasons = _reasons(arrays, relative, average, forced)
    return Targets(average, utilization, (forced[0], forced[1], forced[2]), reasons)


def average_targets(arrays: ClusterArrays) -> Targets:
    """Targets at the average for every eligible broker: the plain band, used to judge a
    cluster whose targets cannot be computed (it cannot hold its load at all)."""
    average = _totals(arrays) / arrays.capacity[arrays.eligible].sum(axis=0)
    utilization = np.where(arrays.eligible[:, None], average[None, :], 0.0)
    return Targets(average, utilization, (False, False, False), ())


def targets_or_average(arrays: ClusterArrays, goals: Goals) -> Targets:
    """The achievable targets, or the average where no placement keeps every broker under
    the cap (the capacity check reports that; balance is judged against the average)."""
    if not arrays.eligible.any():
        return Targets(np.zeros(3), np.zeros((arrays.brokers, 3)), (False, False, False), ())
    try:
        return achievable_targets(arrays, goals)
    except PlanError:
        return average_targets(arrays)


def _too_full(r: int, average: float, goals: Goals) -> str:
    fix = ("add brokers or raise --max-utilization" if average <= 1.0 else
           "add brokers, or check the capacities (more than all of it is used)")
    return (f"the remaining brokers cannot hold the load: average {RESOURCE_NAMES[r]} "
            f"utilization {average:.0%} is above the {goals.max_utilization:.0%} maximum; "
            f"{fix}")


def _reasons(arrays: ClusterArrays, relative: FloatArray, average: FloatArray,
             forced: list[bool]) -> tuple[str, ...]:
    """Per rack whose targets are off the average: its brokers' targets and the rule that
    sets them, e.g. "rack a holds exactly 1 replica of every partition (RF 3 over 3 racks) on
    3 brokers: they can carry no more than 43% disk, 43% net in (cluster average 55%)"."""
    out: list[str] = []
    resources = [r for r in range(3) if forced[r]]
    if not resources:
        return ()
    for rack in sorted({int(arrays.rack[b]) for b in np.flatnonzero(arrays.eligible)}):
        members = np.flatnonzero(arrays.eligible & (arrays.rack == rack))
        levels = {r: float(relative[members, r].mean()) for r in resources}
        off = [r for r in resources if abs(levels[r] - 1.0) >= 0.005]
        if not off:
            continue
        name = (arrays.rack_names[rack] if arrays.rack_names
                else f"broker {int(arrays.broker_ids[members[0]])}")
        below = levels[off[0]] < 1.0
        values = ", ".join(f"{levels[r] * average[r]:.0%} {RESOURCE_NAMES[r]}" for r in off)
        averages_text = ", ".join(dict.fromkeys(f"{average[r]:.0%}" for r in off))
        verb = "can carry no more than" if below else "cannot get below"
        out.append(f"{_rack_rule(arrays, name, below)} on {_brokers(members.size)}: they "
                   f"{verb} {values} (cluster average {averages_text})")
    return tuple(out)


def _rack_overflow(arrays: ClusterArrays, r: int, max_utilization: float) -> str:
    """The racks the rack rule overfills on resource `r` (disk or net in: every replica
    carries the partition's whole size or inflow), named with the share of their capacity
    they would need; "" when none does by this bound."""
    if arrays.rack_count == 0 or r == NET_OUT:
        return ""
    load = arrays.size if r == DISK else arrays.net_in
    least = np.maximum(arrays.rf - arrays.rack_limit * (arrays.rack_count - 1), 0)
    out = []
    for rack in sorted({int(arrays.rack[b]) for b in np.flatnonzero(arrays.eligible)}):
        members = np.flatnonzero(arrays.eligible & (arrays.rack == rack))
        capacity = float(arrays.capacity[members, r].sum())
        need = float((least * load).sum())
        if capacity > 0 and need > max_utilization * capacity:
            name = arrays.rack_names[rack] if arrays.rack_names else str(rack)
            ids = ", ".join(str(int(arrays.broker_ids[b])) for b in members)
            out.append(f"rack {name} keeps {_brokers(members.size)} ({ids}) and must hold at "
                       f"least {_rack_rule_least(arrays)} of every partition: "
                       f"{need / capacity:.0%} of their {RESOURCE_NAMES[r]}")
    return "; ".join(out)


def _common_rule(arrays: ClusterArrays) -> tuple[int, int, int]:
    """The rack rule for the most common RF: (RF, the most replicas a rack may hold, the
    fewest it must hold); racks must be in use."""
    rf = int(np.bincount(arrays.rf).argmax())
    limit = -(-rf // arrays.rack_count)
    return rf, limit, max(rf - limit * (arrays.rack_count - 1), 0)


def _rack_rule_least(arrays: ClusterArrays) -> str:
    rf, _, least = _common_rule(arrays)
    return f"{least} replica{'s' if least != 1 else ''} (RF {rf} over {arrays.rack_count} racks)"


def _brokers(count: int) -> str:
    return f"{count} broker{'s' if count != 1 else ''}"


def _rack_rule(arrays: ClusterArrays, name: str, below: bool) -> str:
    """What the rack rule makes `name` hold, for the most common RF."""
    if arrays.rack_count == 0:
        rf = int(np.bincount(arrays.rf).argmax())
        return f"{name} holds its share of RF {rf} with at most one replica per broker"
    rf, limit, least = _common_rule(arrays)
    rule = f"(RF {rf} over {arrays.rack_count} racks)"
    replicas = f"replica{'s' if limit != 1 else ''}"
    if least == limit:
        return f"rack {name} holds exactly {limit} {replicas} of every partition {rule}"
    if below:
        return f"rack {name} holds at most {limit} {replicas} of each partition {rule}"
    return f"rack {name} holds at least {least} of each partition's replicas {rule}"


def band(arrays: ClusterArrays, targets: Targets, tolerance: float,
         max_utilization: float) -> tuple[FloatArray, FloatArray]:
    """Lower and upper load [B, 3] of "balanced": target * (1 -/+ tolerance) * capacity, the
    upper capped at the max utilization; brokers that must end empty get [0, 0]."""
    util = targets.utilization
    lower = util * (1 - tolerance) * arrays.capacity
    upper = np.minimum(util * (1 + tolerance), max_utilization) * arrays.capacity
    lower[~arrays.eligible] = 0.0
    upper[~arrays.eligible] = 0.0
    return lower, upper


def aim(arrays: ClusterArrays, targets: Targets, tolerance: float, max_utilization: float,
        margin: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """The band the planner aims at: `band` narrowed by `margin`, and half as wide for a
    resource the hard rules force off the average, so that inside each zone the brokers end
    level and the fullest close to the least any placement can reach, rather than anywhere
    in a band around a target that is itself a compromise."""
    lower, upper = band(arrays, targets, max(tolerance - margin, 0.0), max_utilization)
    half_lower, half_upper = band(arrays, targets, max(tolerance / 2 - margin, 0.0),
                                  max_utilization)
    forced = np.array(targets.forced)
    return (np.where(forced[None, :], half_lower, lower),
            np.where(forced[None, :], half_upper, upper))


def deviation(arrays: ClusterArrays, targets: Targets, loads: FloatArray) -> FloatArray:
    """Per resource: the largest |utilization / target - 1| over eligible brokers."""
    util = loads / arrays.capacity
    target = targets.utilization
    eligible: BoolArray = arrays.eligible
    out = np.zeros(3)
    for r in range(3):
        t = target[eligible, r]
        u = util[eligible, r]
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = np.where(t > 0, np.abs(u / np.where(t > 0, t, 1.0) - 1.0),
                           np.where(u > 0, _NO_TARGET, 0.0))
        out[r] = float(dev.max()) if dev.size else 0.0
    return out


@dataclass(frozen=True)
class ZoneLevels:
    """How a placement sits against the targets, rack by rack.

    fullest: over the resources, where forced the fullest broker over the least any placement
    can give the fullest (the largest target), elsewhere over the top of the tolerance band
    around the average (<= 1 is inside it). forced_spread / other_spread: the largest
    |utilization / rack mean - 1| of the forced resources and of the others, rack means
    capacity-weighted over the brokers that remain."""

    fullest: float
    forced_spread: float
    other_spread: float


def zone_levels(arrays: ClusterArrays, targets: Targets, loads: FloatArray,
                tolerance: float) -> ZoneLevels:
    util = loads / arrays.capacity
    keep = arrays.eligible
    fullest = 0.0
    for r in range(3):
        if targets.average[r] <= 0:
            continue
        top = float(util[keep, r].max())
        best = (float(targets.utilization[keep, r].max()) if targets.forced[r]
                else float(targets.average[r]) * (1 + tolerance))
        fullest = max(fullest, top / best)
    spread = np.zeros(3)
    for rack in np.unique(arrays.rack[keep]).tolist():
        members = keep & (arrays.rack == rack)
        mean = loads[members].sum(axis=0) / arrays.capacity[members].sum(axis=0)
        rel = np.abs(util[members] / np.where(mean > 0, mean, 1.0) - 1.0)
        spread = np.maximum(spread, rel.max(axis=0))
    forced = np.array(targets.forced)
    return ZoneLevels(fullest, float(spread[forced].max(initial=0.0)),
                      float(spread[~forced].max(initial=0.0)))

