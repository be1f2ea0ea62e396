"""The one independent plan validator: hard goals and a balance report.

It knows nothing of how a plan was found (it never imports the solver), so the tests, `plan`
before writing, and the executor's preflight all judge a plan by the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from kafka_rebalance.core.errors import PlanError
from kafka_rebalance.core.names import listed
from planner.arrays import ClusterArrays, FloatArray, to_arrays
from planner.balance import WORSE_MARGIN, Targets, deviation, targets_or_average
from planner.goals import Goals
from planner.ordering import short_of_replicas, stranded
from planner.result import Move
from planner.tally import (
    FlatReplicas,
    Tally,
    balance_of,
    flatten,
    load_rows,
    retally,
    tally_flat,
)
from topology.load import ROUNDING_SLACK, bytes_moved, within_tolerance
from topology.model import (
    RESOURCES,
    Broker,
    Partition,
    Resource,
    TopicPartition,
    Topology,
)

Assignment = Mapping[TopicPartition, Sequence[int]]
"""Target replica lists by partition (Kafka's reassignment JSON, parsed)."""

_MAX_LISTED = 20


@dataclass(frozen=True, slots=True)
class ResourceReport:
    """Balance of one resource before and after: max/avg and min/avg of utilization, and the
    largest distance of a broker from its target (planner.balance: the average, or where the
    rack rule forbids that, the best any placement reaches), as a fraction of the target."""

    resource: Resource
    tolerance: float
    average_before: float
    max_over_avg_before: float
    min_over_avg_before: float
    average_after: float
    max_over_avg_after: float
    min_over_avg_after: float
    deviation_before: float
    deviation_after: float
    forced: bool = False

    @property
    def within_tolerance_before(self) -> bool:
        return within_tolerance(self.deviation_before, self.tolerance)

    @property
    def within_tolerance_after(self) -> bool:
        return within_tolerance(self.deviation_after, self.tolerance)

    @property
    def worse(self) -> bool:
        """True when the plan leaves this resource unbalanced and further from its targets."""
        return (not self.within_tolerance_after
                and self.deviation_after > self.deviation_before + WORSE_MARGIN)


@dataclass(frozen=True)
class ValidationReport:
    """What the validator found: hard violations (`errors`), `warnings`, the balance report."""

    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    resources: tuple[ResourceReport, ...]
    moves: int
    bytes_moved: int
    targets: Targets | None = field(default=None, compare=False)

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def balanced(self) -> bool:
        """Every resource within tolerance after the plan."""
        return all(r.within_tolerance_after for r in self.resources)

    def resource(self, resource: Resource) -> ResourceReport:
        return next(r for r in self.resources if r.resource is resource)

    def raise_if_invalid(self) -> None:
        """Raise PlanError listing the hard violations (the first 20) when there are any."""
        if not self.errors:
            return
        shown = "\n  ".join(self.errors[:_MAX_LISTED])
        more = len(self.errors) - _MAX_LISTED
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise PlanError(f"the plan breaks {len(self.errors)} hard goal(s):\n  {shown}{tail}")


def validate_plan(before: Topology, after: Topology | Sequence[Move] | Assignment,
                  goals: Goals, *, worse_balance_is_error: bool = True,
                  untouched_breaks_are_errors: bool = True) -> ValidationReport:
    """Check a plan against the cluster it was made for.

    `after` is the planned topology, the plan's moves, or a raw target assignment. Without
    `worse_balance_is_error`, a resource left further from its targets is a warning (an
    operator's own moves, made for another reason than balance). Without
    `untouched_breaks_are_errors`, a partition the plan does not change that already breaks a
    hard rule (a crowded rack, a replica on an offline or removed broker) is a warning: running
    the plan leaves it as it is, so it is no reason to refuse the run.
    """
    errors: list[str] = []
    warnings: list[str] = []
    changes = _changes(before, after, errors)
    _check_brokers(before, after, goals, errors)
    arrays = flatten(before)
    changed = _check_partitions(before, arrays, changes, goals, errors,
                                errors if untouched_breaks_are_errors else warnings)
    warnings.extend(stranded_warning(before))
    moved = sum(bytes_moved(p, r) for p, r in changed)
    errors.extend(_onto_cordoned(changed, goals.cordoned_brokers))
    resources: tuple[ResourceReport, ...] = ()
    known = set(before.broker_ids)
    if all(len(set(r)) == len(r) and set(r) <= known for _, r in changed):
        counts_before = tally_flat(arrays)
        counts_after = retally(counts_before, changed)
        _check_capacity(before.brokers, counts_after, goals, errors)
        known_goals = replace(goals, add_brokers=goals.add_brokers & known,
                              remove_brokers=goals.remove_brokers & known)
        cluster = to_arrays(before, known_goals)
        targets = targets_or_average(cluster, known_goals)
        resources = _balance_report(before.brokers, counts_before, counts_after, goals,
                                    _deviations(cluster, targets, counts_before, counts_after),
                                    targets.forced)
        draining = bool(goals.remove_brokers) or not all(b.alive for b in before.brokers)
        _judge_balance(resources, goals.tolerance, draining,
                       errors if worse_balance_is_error else warnings, warnings)
        return ValidationReport(tuple(errors), tuple(warnings), resources, len(changed), moved,
                                targets)
    return ValidationReport(tuple(errors), tuple(warnings), resources, len(changed), moved)


Key = tuple[str, int]


def _changes(before: Topology, after: Topology | Sequence[Move] | Assignment,
             errors: list[str]) -> dict[Key, tuple[int, ...]]:
    """Target replicas of the partitions the plan changes; moves must start from the current
    replicas."""
    current = {(p.topic, p.partition): p.replicas for p in before.partitions}
    changes: dict[Key, tuple[int, ...]] = {}
    if isinstance(after, Topology):
        target = {(p.topic, p.partition): p.replicas for p in after.partitions}
        for key in sorted(set(current) - set(target)):
            errors.append(f"partition {_name(key)} is missing from the planned topology")
        changes = {k: v for k, v in target.items() if current.get(k, v) != v or k not in current}
    elif isinstance(after, Mapping):
        changes = {(k.topic, k.partition): tuple(v) for k, v in after.items()}
    else:
        for move in after:
            key = (move.topic, move.partition)
            if key in changes:
                errors.append(f"partition {_name(key)} is moved more than once")
            elif key in current and tuple(move.current) != current[key]:
                errors.append(f"partition {_name(key)}: the plan expects replicas "
                              f"{list(move.current)} but the cluster has "
                              f"{list(current[key])} (the plan is stale)")
            changes[key] = tuple(move.target)
    for key in sorted(set(changes) - set(current)):
        errors.append(f"partition {_name(key)} is not in the cluster the plan was made for")
        del changes[key]
    return {k: v for k, v in changes.items() if v != current[k]}


def _name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def _onto_cordoned(changed: Sequence[tuple[Partition, tuple[int, ...]]],
                   cordoned: frozenset[int]) -> list[str]:
    """A replica added on a cordoned broker (KIP-1066): a hard rule, like an offline one."""
    if not cordoned:
        return []
    return [f"partition {p.name}: adds a replica on cordoned broker {b} (cordoned.log.dirs); "
            "a cordoned broker takes no new replica"
            for p, r in changed for b in sorted((set(r) - set(p.replicas)) & cordoned)]


def exposure_warnings(before: Topology, moves: Sequence[Move]) -> list[str]:
    """What the review says first on a cluster with offline brokers: the partitions short of
    live replicas now, those down to one (one more failure loses them), and how many the plan
    heals (planner.ordering puts their moves first, the most exposed first)."""
    short = short_of_replicas(before)
    if not short:
        return []
    offline = sorted(b.id for b in before.brokers if not b.alive)
    alive = set(before.broker_ids) - set(offline)
    healed = sum(1 for m in moves if m.key in short and set(m.target) <= alive)
    last = sorted((k for k, n in short.items() if n == 1), key=lambda k: (k.topic, k.partition))
    lone = (f"; {len(last)} are down to one live replica "
            f"({listed([str(k) for k in last], 5)}): one more failure "
            "loses their data, and producers with acks=all wait on them" if last else "")
    return [f"{len(short)} partition(s) have replicas on offline broker(s) {offline}{lone}. "
            f"The plan heals {healed} of them, their moves first, the fewest live replicas "
            "first"]


def stranded_warning(before: Topology) -> list[str]:
    """What the review says of partitions no plan can move: every replica on an offline
    broker (planner.ordering.stranded). The planner leaves them where they are."""
    keys = stranded(before)
    if not keys:
        return []
    on = sorted({b for p in before.partitions if p.key in keys for b in p.replicas})
    names = listed([str(k) for k in sorted(keys, key=lambda k: (k.topic, k.partition))], 5)
    return [f"{len(keys)} partition(s) have no live replica ({names}): every replica is on "
            f"offline broker(s) {on}, so no move can copy them and the plan leaves them there; "
            "they come back with those brokers (and are lost if none comes back)"]


def _check_brokers(before: Topology, after: Topology | Sequence[Move] | Assignment,
                   goals: Goals, errors: list[str]) -> None:
    known = set(before.broker_ids)
    for label, ids in (("added", goals.add_brokers), ("removed", goals.remove_brokers)):
        for broker_id in sorted(ids - known):
            errors.append(f"broker {broker_id} to be {label} is not in the cluster "
                          f"(brokers are {sorted(known)})")
    if isinstance(after, Topology) and after.brokers != before.brokers:
        errors.append("the planned topology changes the brokers (ids, racks, capacities); "
                      "a plan may only change replica lists")


class RackedBroker(Protocol):
    """What the rack rule reads of a broker: the model's Broker, or a plan file's record."""

    @property
    def id(self) -> int: ...

    @property
    def rack(self) -> str | None: ...

    @property
    def alive(self) -> bool: ...


def rack_limit(brokers: Mapping[int, RackedBroker], goals: Goals) -> tuple[dict[int, str], int]:
    """Rack of each broker, and the number of racks of eligible brokers (0: racks not set)."""
    if not goals.rack_aware or all(b.rack is None for b in brokers.values()):
        return {}, 0
    eligible = [b for b in brokers.values() if b.alive and b.id not in goals.remove_brokers]
    racks = {b.id: str(b.rack) for b in brokers.values()}
    return racks, len({racks[b.id] for b in eligible}) or 1


def _check_partitions(before: Topology, arrays: FlatReplicas,
                      changes: Mapping[Key, tuple[int, ...]], goals: Goals,
                      errors: list[str], untouched: list[str]
                      ) -> list[tuple[Partition, tuple[int, ...]]]:
    """Hard goals of every partition after the plan; returns the changed partitions.

    Unchanged partitions can only break a goal through a bad broker (offline, removed) or a
    rack rule they already broke: a vectorized pass flags those, the rest is not revisited.
    What they break goes to `untouched`.
    """
    brokers = {b.id: b for b in before.brokers}
    racks, rack_count = rack_limit(brokers, goals)
    stuck = stranded(before)
    changed: list[tuple[Partition, tuple[int, ...]]] = []
    for p in before.partitions:
        replicas = changes.get((p.topic, p.partition))
        if replicas is not None:
            changed.append((p, replicas))
            if _reorder_only(p, replicas):
                continue  # its set keeps what it broke: judged as unchanged, below
            if p.key in stuck:
                errors.append(f"partition {p.name}: no live replica to copy from (replicas "
                              f"{list(p.replicas)} are all on offline brokers), so its "
                              "reassignment cannot complete; leave it in place")
            errors.extend(_partition_errors(p, replicas, brokers, goals))
            if rack_count:
                error = _rack_error(p, replicas, racks, rack_count)
                if error:
                    errors.append(error)
    for index in _flag_unchanged(before, arrays, racks, rack_count, goals):
        p = before.partitions[index]
        order = changes.get((p.topic, p.partition))
        if p.key in stuck or (order is not None and not _reorder_only(p, order)):
            continue  # judged above (a stranded one is told once, by stranded_warning)
        found = _partition_errors(p, p.replicas, brokers, goals)
        error = _rack_error(p, p.replicas, racks, rack_count) if rack_count else None
        found += [error] if error else []
        suffix = "" if untouched is errors else " (already so; the plan does not change it)"
        untouched.extend(f"{problem}{suffix}" for problem in found)
    return changed


def _flag_unchanged(before: Topology, arrays: FlatReplicas, racks: Mapping[int, str],
                    rack_count: int, goals: Goals) -> list[int]:
    """Indexes of partitions whose current replicas touch a bad broker or crowd a rack."""
    n = len(before.partitions)
    bad = np.array([not b.alive or b.id in goals.remove_brokers for b in before.brokers])
    flagged = np.bincount(arrays.owner, weights=bad[arrays.flat], minlength=n) > 0
    if rack_count:
        names = sorted(set(racks.values()))
        rack_of = np.array([names.index(racks[b.id]) for b in before.brokers], dtype=np.int64)
        per_rack = np.bincount(arrays.owner * len(names) + rack_of[arrays.flat],
                               minlength=n * len(names)).reshape(n, len(names))
        flagged |= per_rack.max(axis=1, initial=0) > -(-arrays.rf // rack_count)
    return [int(i) for i in np.flatnonzero(flagged)]


def _reorder_only(p: Partition, replicas: tuple[int, ...]) -> bool:
    """`replicas` are `p`'s own in another order (a leadership move: Move.leadership_only)."""
    return len(replicas) == len(p.replicas) and set(replicas) == set(p.replicas)


def crowded_rack(replicas: Sequence[int], racks: Mapping[int, str],
                 rack_count: int) -> tuple[str, int, int] | None:
    """The first rack (by name) holding more of `replicas` than its share with `rack_count`
    racks: (rack, replicas it holds, the share); None when none does, or a replica's broker
    has no known rack (an unknown broker, reported apart)."""
    if not all(r in racks for r in replicas):
        return None
    limit = math.ceil(len(replicas) / rack_count)
    per_rack: dict[str, int] = {}
    for r in replicas:
        per_rack[racks[r]] = per_rack.get(racks[r], 0) + 1
    crowded = sorted(rack for rack, n in per_rack.items() if n > limit)
    return (crowded[0], per_rack[crowded[0]], limit) if crowded else None


def _rack_error(p: Partition, replicas: tuple[int, ...], racks: Mapping[int, str],
                rack_count: int) -> str | None:
    found = crowded_rack(replicas, racks, rack_count)
    if found is None:
        return None
    rack, held, limit = found
    return (f"partition {p.name}: rack {rack} holds {held} of its replicas {list(replicas)} "
            f"(at most {limit} with {rack_count} racks)")


def _partition_errors(p: Partition, replicas: tuple[int, ...], brokers: Mapping[int, Broker],
                      goals: Goals) -> list[str]:
    found: list[str] = []
    if len(replicas) != p.replication_factor:
        found.append(f"partition {p.name}: replication factor changes from "
                     f"{p.replication_factor} to {len(replicas)} ({list(replicas)})")
    if len(set(replicas)) != len(replicas):
        found.append(f"partition {p.name}: replicas {list(replicas)} repeat a broker")
    for r in replicas:
        broker = brokers.get(r)
        if broker is None:
            found.append(f"partition {p.name}: replica on unknown broker {r}")
        elif not broker.alive:
            found.append(f"partition {p.name}: replica on offline broker {r}")
        elif r in goals.remove_brokers:
            found.append(f"partition {p.name}: replica stays on removed broker {r}")
    return found


def _check_capacity(brokers: Sequence[Broker], counts: Tally, goals: Goals,
                    errors: list[str]) -> None:
    for b in brokers:
        load = counts.load(b.id)
        for res in RESOURCES:
            util = load.of(res) / b.capacity.of(res)
            if util > goals.max_utilization + ROUNDING_SLACK:
                errors.append(f"broker {b.id}: {res.value} utilization {util:.1%} is above "
                              f"the maximum {goals.max_utilization:.0%}")


def _deviations(cluster: ClusterArrays, targets: Targets, before: Tally,
                after: Tally) -> tuple[FloatArray, FloatArray]:
    """Per resource, the largest distance of a broker from its target, before and after."""
    return (deviation(cluster, targets, load_rows(before, cluster.broker_ids)),
            deviation(cluster, targets, load_rows(after, cluster.broker_ids)))


def _balance_report(brokers: Sequence[Broker], before: Tally, after: Tally, goals: Goals,
                    deviations: tuple[FloatArray, FloatArray],
                    forced: tuple[bool, bool, bool]) -> tuple[ResourceReport, ...]:
    """Spread before over every alive broker, after over the alive brokers that remain;
    deviations from the targets over the brokers that remain, both times."""
    alive = [b for b in brokers if b.alive]
    remaining = [b for b in alive if b.id not in goals.remove_brokers]
    bal_before = balance_of(before, alive)
    bal_after = balance_of(after, remaining or alive)
    out = []
    for index, res in enumerate(RESOURCES):
        b, a = bal_before[res], bal_after[res]
        out.append(ResourceReport(res, goals.tolerance, b.average, b.max_over_avg,
                                  b.min_over_avg, a.average, a.max_over_avg, a.min_over_avg,
                                  float(deviations[0][index]), float(deviations[1][index]),
                                  forced[index]))
    return tuple(out)


def _judge_balance(resources: tuple[ResourceReport, ...], tolerance: float, draining: bool,
                   errors: list[str], warnings: list[str]) -> None:
    """Worse balance is a hard violation unless draining removed or offline brokers forces
    it."""
    for r in resources:
        what = "its target" if r.forced else "the average"
        if r.worse:
            text = (f"{r.resource.value} balance gets worse: the broker furthest from {what} "
                    f"is {r.deviation_before:.1%} off before and {r.deviation_after:.1%} after "
                    f"(max/avg {r.max_over_avg_before:.3f} -> {r.max_over_avg_after:.3f})")
            if draining:
                warnings.append(text + " (forced by draining removed or offline brokers)")
            else:
                errors.append(text)
        elif not r.within_tolerance_after:
            warnings.append(f"{r.resource.value} is not within +/-{tolerance:.0%} of "
                            f"{what} after the plan: a broker is {r.deviation_after:.1%} off "
                            f"(max/avg {r.max_over_avg_after:.3f}, min/avg "
                            f"{r.min_over_avg_after:.3f})")
