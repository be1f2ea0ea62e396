"""The plan file: Kafka's reassignment JSON at its core, plus what the executor and reviewers need.

`version` and `partitions` (final replicas, preferred leader first, changed partitions only) are
exactly what `kafka-reassign-partitions --execute --reassignment-json-file` reads; the extra
top-level keys carry the ordered moves, the fingerprint of the cluster the plan was made
against, the goals, before/after statistics and the solver's account of itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from planner.arrays import ClusterArrays, IntArray, to_arrays
from planner.balance import Targets, deviation, targets_or_average
from planner.goals import Budget, Goals
from planner.leader_balance import LeaderLevel, leader_level
from planner.log_dirs import DirPlan
from planner.requests import FairRequests, RequestLevel, request_level, served
from planner.result import Move, MoveTotals, SolverStatus
from planner.spread import Crowding, crowding
from planner.tally import Tally, balance_of, load_rows, retally, tally
from topology.load import within_tolerance
from topology.model import RESOURCES, Broker, Capacity, Load, Resource, TopicPartition, Topology

PLAN_VERSION = 1


@dataclass(frozen=True, slots=True)
class BrokerStats:
    """One broker's replicas, leaders, load and capacity at one point of the plan."""

    id: int
    rack: str | None
    alive: bool
    replicas: int
    leaders: int
    load: Load
    capacity: Capacity
    quota_window_seconds: float | None = None  # as the snapshot read it

    def utilization(self, resource: Resource) -> float:
        return self.load.of(resource) / self.capacity.of(resource)


@dataclass(frozen=True, slots=True)
class ResourceStats:
    """Capacity-weighted average utilization of one resource, its spread and the largest
    distance of a broker from its target (planner.balance) as a fraction of the target:
    `deviation` is None in plan files written before targets existed."""

    resource: Resource
    average: float
    max_over_avg: float
    min_over_avg: float
    within_tolerance: bool
    deviation: float | None = None
    forced: bool = False

    @property
    def off_target(self) -> float:
        """How far the farthest broker is from its target (from the average in old files)."""
        if self.deviation is not None:
            return self.deviation
        return max(self.max_over_avg - 1, 1 - self.min_over_avg, 0.0)


@dataclass(frozen=True)
class TargetInfo:
    """What the plan is balanced against: per broker id the target utilization of disk, net
    in and net out, which resources the hard rules force off the average, and why."""

    utilization: Mapping[int, tuple[float, float, float]]
    forced: tuple[bool, bool, bool]
    reasons: tuple[str, ...]

    def of(self, broker_id: int, resource: Resource) -> float | None:
        row = self.utilization.get(broker_id)
        return None if row is None else row[RESOURCES.index(resource)]


@dataclass(frozen=True)
class ClusterStats:
    """Per-broker and per-resource statistics of a topology."""

    brokers: tuple[BrokerStats, ...]
    resources: tuple[ResourceStats, ...]

    def resource(self, resource: Resource) -> ResourceStats:
        return next(r for r in self.resources if r.resource is resource)


@dataclass(frozen=True, slots=True)
class SolverInfo:
    """How the plan was found: status, the lower bound and the bytes moved against it, CP-SAT's
    own gap where it proved one, and what binds."""

    status: SolverStatus
    lower_bound_bytes: int
    excess_over_bound: float | None = None  # bytes moved / lower bound - 1 (not a solver gap)
    seconds: float = 0.0
    binding: tuple[str, ...] = ()
    proven_gap: float | None = None  # CP-SAT's relative gap to its proven bound (exact model)
    disk_lower_bound_bytes: int | None = None  # the disk-only bound (lower_bound_bytes: all)
    phase_seconds: tuple[tuple[str, float], ...] = ()  # where the time went (planner.phases)


@dataclass(frozen=True, slots=True)
class SpreadInfo:
    """How much topics crowd brokers before and after the plan, at the --topic-spread
    tolerance (planner.spread)."""

    tolerance: float
    before: Crowding
    after: Crowding


@dataclass(frozen=True, slots=True)
class LeaderInfo:
    """How far leader counts and leader bytes in are from each broker's fair share before and
    after the plan, at the --leader-balance tolerance (planner.leader_balance)."""

    tolerance: float
    before: LeaderLevel
    after: LeaderLevel


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """How far brokers' produce and fetch requests are from their fair shares before and
    after the plan, at the --request-balance tolerance (planner.requests)."""

    tolerance: float
    before: RequestLevel
    after: RequestLevel
    brokers: tuple[BrokerRequests, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerRequests:
    """One broker's requests a second before and after the plan, its fair share and its band
    (the fair share +/- the tolerance, or +/- 1% of its request capacity when that is wider:
    planner.requests.FairRequests)."""

    id: int
    before: float
    after: float
    fair: float
    low: float
    high: float

    @property
    def outside_after(self) -> bool:
        """Is the broker outside its band after the plan (as the verdict's count says)?"""
        off = max(self.after - self.high, 0.0) + max(self.low - self.after, 0.0)
        return self.fair > 0 and off > 1e-9 * self.fair


@dataclass(frozen=True, slots=True)
class TieredInfo:
    """Tiered storage (KIP-405): what remote storage holds, in the cluster and in the
    partitions the plan copies. None of it is copied: a move copies local bytes only."""

    remote_bytes: int
    moved_remote_bytes: int


@dataclass(frozen=True)
class PlanFile(MoveTotals):
    """A plan as written to disk: ordered moves and the context to review or execute them."""

    moves: tuple[Move, ...]
    fingerprint: str
    goals: Goals
    budget: Budget
    before: ClusterStats
    after: ClusterStats
    solver: SolverInfo
    created_at: str
    warnings: tuple[str, ...] = ()
    targets: TargetInfo | None = None
    spread: SpreadInfo | None = None  # with --topic-spread only
    leaders: LeaderInfo | None = None  # with --leader-balance only
    tiered: TieredInfo | None = None  # when partitions keep bytes in remote storage
    log_dirs: DirPlan | None = None  # when brokers keep replicas in several log dirs (JBOD)
    requests: RequestInfo | None = None  # with --request-balance only

    def assignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        """Target replicas of every changed partition."""
        return {m.key: m.target for m in self.moves}

    def quota_window_seconds(self) -> float | None:
        """The longest replication quota window the snapshot read on the brokers the moves
        copy between, as the executor reads it before a run; None when it read none."""
        moved = {b for m in self.moves for b in (*m.current, *m.target)}
        windows = [b.quota_window_seconds for b in self.before.brokers
                   if b.id in moved and b.alive and b.quota_window_seconds is not None]
        return max(windows, default=None)


def cluster_stats(brokers: Sequence[Broker], counts: Tally, tolerance: float,
                  members: Sequence[Broker], deviations: Sequence[float] | None = None,
                  forced: Sequence[bool] = (False, False, False)) -> ClusterStats:
    """Statistics of one view of the cluster; the spread is over `members`; `deviations`
    per resource from the targets decide `within_tolerance` (the average's band without)."""
    stats = tuple(BrokerStats(b.id, b.rack, b.alive, counts.replicas(b.id),
                              counts.leaders(b.id), counts.load(b.id), b.capacity,
                              b.quota_window_seconds)
                  for b in brokers)
    bal = balance_of(counts, members)
    resources = []
    for index, res in enumerate(RESOURCES):
        dev = None if deviations is None else float(deviations[index])
        within = bal[res].within(tolerance) if dev is None else within_tolerance(dev, tolerance)
        resources.append(ResourceStats(res, bal[res].average, bal[res].max_over_avg,
                                       bal[res].min_over_avg, within, dev, bool(forced[index])))
    return ClusterStats(stats, tuple(resources))


def target_info(arrays: ClusterArrays, targets: Targets) -> TargetInfo:
    """The targets of the brokers that remain, by broker id."""
    rows = {int(arrays.broker_ids[b]): (float(targets.utilization[b, 0]),
                                        float(targets.utilization[b, 1]),
                                        float(targets.utilization[b, 2]))
            for b in np.flatnonzero(arrays.eligible).tolist()}
    return TargetInfo(rows, targets.forced, targets.reasons)


def make_plan_file(before: Topology, moves: Sequence[Move], goals: Goals, budget: Budget,
                   solver: SolverInfo, created_at: str, warnings: Sequence[str] = (),
                   targets: Targets | None = None, log_dirs: DirPlan | None = None) -> PlanFile:
    """A plan file value: before over every alive broker, after over those that remain;
    deviations from the targets (computed here unless given) over those that remain.

    The moves must apply to `before` (validate_plan checks that first).
    """
    alive = [b for b in before.brokers if b.alive]
    remaining = [b for b in alive if b.id not in goals.remove_brokers] or alive
    wanted = {(m.topic, m.partition) for m in moves}
    partitions = ({(p.topic, p.partition): p for p in before.partitions
                   if (p.topic, p.partition) in wanted} if wanted else {})
    counts_before = tally(before)
    counts_after = retally(counts_before, ((partitions[(m.topic, m.partition)], m.target)
                                           for m in moves))
    arrays = to_arrays(before, goals)
    targets = targets or targets_or_average(arrays, goals)
    dev_before = deviation(arrays, targets, load_rows(counts_before, arrays.broker_ids))
    dev_after = deviation(arrays, targets, load_rows(counts_after, arrays.broker_ids))
    tol = goals.tolerance
    after = _after(before, arrays, moves)
    spread = None if goals.topic_spread is None else SpreadInfo(
        goals.topic_spread, crowding(arrays, arrays.replicas, goals.topic_spread),
        crowding(arrays, after, goals.topic_spread))
    leaders = None if goals.leader_balance is None else LeaderInfo(
        goals.leader_balance, leader_level(arrays, arrays.replicas, goals.leader_balance),
        leader_level(arrays, after, goals.leader_balance))
    requests = None if goals.request_balance is None else RequestInfo(
        goals.request_balance, request_level(arrays, arrays.replicas, goals.request_balance),
        request_level(arrays, after, goals.request_balance),
        broker_requests(arrays, after, goals.request_balance))
    return PlanFile(tuple(moves), before.fingerprint(), goals, budget,
                    cluster_stats(before.brokers, counts_before, tol, alive,
                                  dev_before.tolist(), targets.forced),
                    cluster_stats(before.brokers, counts_after, tol, remaining,
                                  dev_after.tolist(), targets.forced),
                    solver, created_at, tuple(warnings), target_info(arrays, targets), spread,
                    leaders, tiered_info(before, moves), log_dirs, requests)


def broker_requests(arrays: ClusterArrays, after: IntArray, tolerance: float
                    ) -> tuple[BrokerRequests, ...]:
    """Each broker's requests before and after, and its fair share (none without requests)."""
    if not arrays.requests.any():
        return ()
    before_load, after_load = served(arrays, arrays.replicas), served(arrays, after)
    band = FairRequests.of(arrays, tolerance)
    return tuple(BrokerRequests(int(b), float(before_load[i]), float(after_load[i]),
                                float(band.fair[i]), float(band.low[i]), float(band.high[i]))
                 for i, b in enumerate(arrays.broker_ids.tolist()))


def tiered_info(before: Topology, moves: Sequence[Move]) -> TieredInfo | None:
    """Remote bytes of the cluster and of the partitions `moves` copy; None without any."""
    remote = sum(p.remote_size_bytes for p in before.partitions)
    if not remote:
        return None
    copied = {m.key for m in moves if m.bytes_moved}
    return TieredInfo(remote, sum(p.remote_size_bytes for p in before.partitions
                                  if p.key in copied))


def _after(before: Topology, arrays: ClusterArrays, moves: Sequence[Move]) -> IntArray:
    """The replica rows of `before` (whose arrays are given) after `moves`."""
    after = arrays.replicas.copy()
    if moves:
        wanted = {m.key: m.target for m in moves}
        position = {int(b): i for i, b in enumerate(arrays.broker_ids.tolist())}
        for i, partition in enumerate(before.partitions):
            target = wanted.get(partition.key)
            if target is not None:
                after[i, : len(target)] = [position[b] for b in target]
    return after
