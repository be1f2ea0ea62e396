"""The one independent plan validator: hard goals and a balance report.

It knows nothing of how a plan was found (it never imports the solver), so the tests, `plan`
before writing, and the executor's preflight all judge a plan by the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.goals import Goals
from planner.result import Move
from topology.errors import PlanError
from topology.load import ResourceBalance, balance, broker_loads
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

_EPS = 1e-9
_MAX_LISTED = 20


@dataclass(frozen=True, slots=True)
class ResourceReport:
    """Balance of one resource before and after: max/avg and min/avg of utilization."""

    resource: Resource
    tolerance: float
    average_before: float
    max_over_avg_before: float
    min_over_avg_before: float
    average_after: float
    max_over_avg_after: float
    min_over_avg_after: float

    @property
    def deviation_before(self) -> float:
        """Largest relative distance of any broker from the average, before."""
        return max(self.max_over_avg_before - 1, 1 - self.min_over_avg_before, 0.0)

    @property
    def deviation_after(self) -> float:
        return max(self.max_over_avg_after - 1, 1 - self.min_over_avg_after, 0.0)

    @property
    def within_tolerance_before(self) -> bool:
        return self.deviation_before <= self.tolerance + _EPS

    @property
    def within_tolerance_after(self) -> bool:
        return self.deviation_after <= self.tolerance + _EPS

    @property
    def worse(self) -> bool:
        """True when the plan leaves this resource unbalanced and more spread than before."""
        return (not self.within_tolerance_after
                and self.deviation_after > self.deviation_before + 1e-6)


@dataclass(frozen=True)
class ValidationReport:
    """What the validator found: hard violations (`errors`), `warnings`, the balance report."""

    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    resources: tuple[ResourceReport, ...]
    moves: int
    bytes_moved: int

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
                  goals: Goals) -> ValidationReport:
    """Check a plan against the cluster it was made for.

    `after` is the planned topology, the plan's moves, or a raw target assignment.
    """
    errors: list[str] = []
    target = _target_assignment(before, after, errors)
    _check_brokers(before, after, goals, errors)
    moved, count = _check_partitions(before, target, goals, errors)
    after_topology = _after_topology(before, target, errors)
    resources: tuple[ResourceReport, ...] = ()
    warnings: list[str] = []
    if after_topology is not None:
        _check_capacity(after_topology, goals, errors)
        resources = _balance_report(before, after_topology, goals)
        _judge_balance(resources, goals, errors, warnings)
    return ValidationReport(tuple(errors), tuple(warnings), resources, count, moved)


def _target_assignment(before: Topology, after: Topology | Sequence[Move] | Assignment,
                       errors: list[str]) -> dict[TopicPartition, tuple[int, ...]]:
    """Every partition's target replicas; moves must start from the current replicas."""
    current = {p.key: p.replicas for p in before.partitions}
    if isinstance(after, Topology):
        target = {p.key: p.replicas for p in after.partitions}
        for key in sorted(set(current) - set(target), key=_order):
            errors.append(f"partition {key} is missing from the planned topology")
        for key in sorted(set(target) - set(current), key=_order):
            errors.append(f"partition {key} is not in the cluster the plan was made for")
            del target[key]
        return {**current, **target}
    target = dict(current)
    if isinstance(after, Mapping):
        changes = {k: tuple(v) for k, v in after.items()}
    else:
        changes = {}
        for move in after:
            if move.key in changes:
                errors.append(f"partition {move.key} is moved more than once")
            elif move.key in current and tuple(move.current) != current[move.key]:
                errors.append(f"partition {move.key}: the plan expects replicas "
                              f"{list(move.current)} but the cluster has "
                              f"{list(current[move.key])} (the plan is stale)")
            changes[move.key] = tuple(move.target)
    for key, replicas in sorted(changes.items(), key=lambda kv: _order(kv[0])):
        if key not in current:
            errors.append(f"partition {key} is not in the cluster the plan was made for")
        else:
            target[key] = replicas
    return target


def _order(key: TopicPartition) -> tuple[str, int]:
    return (key.topic, key.partition)


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


def _rack_limit(brokers: Mapping[int, Broker], goals: Goals) -> tuple[dict[int, str], int]:
    """Rack of each eligible broker, and the number of racks (0 when racks are not set)."""
    if not goals.rack_aware or all(b.rack is None for b in brokers.values()):
        return {}, 0
    eligible = [b for b in brokers.values() if b.alive and b.id not in goals.remove_brokers]
    racks = {b.id: str(b.rack) for b in brokers.values()}
    return racks, len({racks[b.id] for b in eligible}) or 1


def _check_partitions(before: Topology, target: Mapping[TopicPartition, tuple[int, ...]],
                      goals: Goals, errors: list[str]) -> tuple[int, int]:
    """Per-partition hard goals; returns (bytes moved, partitions changed)."""
    brokers = {b.id: b for b in before.brokers}
    racks, rack_count = _rack_limit(brokers, goals)
    moved = changed = 0
    for p in before.partitions:
        replicas = target[p.key]
        if replicas != p.replicas:
            changed += 1
            moved += p.size_bytes * len(set(replicas) - set(p.replicas))
        errors.extend(_partition_errors(p, replicas, brokers, goals))
        if rack_count and all(r in brokers for r in replicas):
            limit = math.ceil(len(replicas) / rack_count)
            per_rack: dict[str, int] = {}
            for r in replicas:
                per_rack[racks[r]] = per_rack.get(racks[r], 0) + 1
            crowded = sorted(rack for rack, n in per_rack.items() if n > limit)
            if crowded:
                errors.append(f"partition {p.name}: rack {crowded[0]} holds "
                              f"{per_rack[crowded[0]]} of its replicas {list(replicas)} "
                              f"(at most {limit} with {rack_count} racks)")
    return moved, changed


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


def _after_topology(before: Topology, target: Mapping[TopicPartition, tuple[int, ...]],
                    errors: list[str]) -> Topology | None:
    """The planned topology, or None when the target cannot form one (already reported)."""
    if errors:
        # Unknown brokers or repeated replicas cannot form a Topology; any other error still
        # lets the balance be reported.
        known = set(before.broker_ids)
        for replicas in target.values():
            if len(set(replicas)) != len(replicas) or not set(replicas) <= known:
                return None
    parts = [p if target[p.key] == p.replicas else
             Partition(p.topic, p.partition, target[p.key], p.size_bytes,
                       p.bytes_in_per_sec, p.bytes_out_per_sec)
             for p in before.partitions]
    return before.with_partitions(parts)


def _check_capacity(after: Topology, goals: Goals, errors: list[str]) -> None:
    loads = broker_loads(after)
    for b in after.brokers:
        for res in RESOURCES:
            util = loads[b.id].of(res) / b.capacity.of(res)
            if util > goals.max_utilization + _EPS:
                errors.append(f"broker {b.id}: {res.value} utilization {util:.1%} is above "
                              f"the maximum {goals.max_utilization:.0%}")


def _members(topology: Topology, goals: Goals) -> tuple[Broker, ...]:
    return tuple(b for b in topology.brokers if b.alive and b.id not in goals.remove_brokers)


def _balance_report(before: Topology, after: Topology,
                    goals: Goals) -> tuple[ResourceReport, ...]:
    """Before: every alive broker; after: the alive brokers that remain."""
    alive = tuple(b for b in before.brokers if b.alive)
    remaining = _members(after, goals)
    bal_before = balance(before, alive)
    bal_after = balance(after, remaining or alive)
    return tuple(_resource_report(res, goals.tolerance, bal_before[res], bal_after[res])
                 for res in RESOURCES)


def _resource_report(res: Resource, tolerance: float, before: ResourceBalance,
                     after: ResourceBalance) -> ResourceReport:
    return ResourceReport(res, tolerance, before.average, before.max_over_avg,
                          before.min_over_avg, after.average, after.max_over_avg,
                          after.min_over_avg)


def _judge_balance(resources: tuple[ResourceReport, ...], goals: Goals, errors: list[str],
                   warnings: list[str]) -> None:
    """Worse balance is a hard violation unless removing brokers forces it."""
    for r in resources:
        if r.worse:
            text = (f"{r.resource.value} balance gets worse: max/avg {r.max_over_avg_before:.3f}"
                    f" -> {r.max_over_avg_after:.3f}, min/avg {r.min_over_avg_before:.3f} -> "
                    f"{r.min_over_avg_after:.3f}")
            if goals.remove_brokers:
                warnings.append(text + " (forced by removing brokers)")
            else:
                errors.append(text)
        elif not r.within_tolerance_after:
            warnings.append(f"{r.resource.value} is not within +/-{goals.tolerance:.0%} after "
                            f"the plan: max/avg {r.max_over_avg_after:.3f}, min/avg "
                            f"{r.min_over_avg_after:.3f}")
