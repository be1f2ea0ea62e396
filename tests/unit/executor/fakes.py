"""In-memory fakes of the executor's ports: a cluster that copies data over (fake) time at the
throttled rate, a Prometheus that sees that traffic, and a clock that only moves on sleep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from executor.config import Event, EventKind, ExecutorConfig, Ports
from executor.gates import GatePolicy
from executor.plan import ExecutionPlan
from executor.readings import GateQueries
from executor.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    parse_replica_list,
)
from kafka_rebalance.core.errors import ClusterError, MetricsError, TopicGone
from kafka_rebalance.core.ports import BrokerInfo, ConfigChanges, PartitionInfo, ReassignmentState
from planner.result import Move
from topology.model import TopicPartition

UNTHROTTLED = 500_000_000.0  # bytes/s a copy runs at with no throttle


class Crash(BaseException):
    """A simulated kill -9: not an Exception, so nothing in the product catches it."""


class FakeClock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.t = start
        self.sleeps = 0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.t += seconds


@dataclass
class _Reassignment:
    original: tuple[int, ...]
    target: tuple[int, ...]
    copied: float = 0.0

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.original if b not in self.target)


@dataclass
class _Partition:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    size: int


@dataclass
class FakeAdmin:
    """A cluster: brokers, partitions, dynamic configs and KIP-455 reassignments over time."""

    clock: FakeClock
    broker_ids: Sequence[int] = (1, 2, 3, 4)
    dead: set[int] = field(default_factory=set)
    cordoned: set[int] = field(default_factory=set)  # cordoned.log.dirs="*" (KIP-1066)
    # each broker's replication quota window as it describes it (none: the broker does not say)
    quota_window_seconds: dict[int, float] = field(default_factory=dict)
    parts: dict[TopicPartition, _Partition] = field(default_factory=dict)
    broker_cfg: dict[int, dict[str, str]] = field(default_factory=dict)
    topic_cfg: dict[str, dict[str, str]] = field(default_factory=dict)
    moving: dict[TopicPartition, _Reassignment] = field(default_factory=dict)
    stalled: bool = False  # copies make no progress
    calls: list[tuple[str, object]] = field(default_factory=list)
    crash_at: int | None = None  # raise Crash on this call number (1-based)
    crash_after_effect: bool = False  # ... after the call took effect instead of before
    completed: list[TopicPartition] = field(default_factory=list)
    # reads of a topic's configs after each alter that a broker lagging behind answers with
    # the values from before it (a topic's configs are described by any broker)
    stale_topic_reads: int = 0
    _stale: dict[str, tuple[int, dict[str, str]]] = field(default_factory=dict)
    _last: float | None = None

    def add(self, topic: str, partition: int, replicas: Sequence[int], size: int) -> None:
        r = tuple(replicas)
        self.parts[TopicPartition(topic, partition)] = _Partition(r, r, r[0], size)

    def delete_topic(self, topic: str) -> None:
        """As Kafka deletes a topic: its partitions, reassignments and configs go with it."""
        for tp in [tp for tp in self.parts if tp.topic == topic]:
            del self.parts[tp]
            self.moving.pop(tp, None)
        self.topic_cfg.pop(topic, None)

    # ---- plumbing --------------------------------------------------------------------------
    def _call(self, name: str, args: object, effect: Callable[[], object]) -> object:
        self._advance()
        self.calls.append((name, args))
        crash = self.crash_at is not None and len(self.calls) == self.crash_at
        if crash and not self.crash_after_effect:
            raise Crash(f"killed before {name}")
        result = effect()
        if crash:
            raise Crash(f"killed after {name}")
        return result

    def _rate(self, tp: TopicPartition, r: _Reassignment) -> float:
        if self.stalled or any(b in self.dead for b in r.adding):
            return 0.0
        rate = UNTHROTTLED
        topic = self.topic_cfg.get(tp.topic, {})
        for b in r.adding:
            if _listed(topic.get(FOLLOWER_REPLICAS), tp.partition, b):
                share = sum(1 for other in self.moving.values() if b in other.adding)
                rate = min(rate, float(self.broker_cfg.get(b, {}).get(FOLLOWER_RATE, UNTHROTTLED))
                           / max(1, share))  # a broker's quota is shared by what it receives
        leader = self.parts[tp].leader
        if _listed(topic.get(LEADER_REPLICAS), tp.partition, leader):
            share = sum(1 for k in self.moving if self.parts[k].leader == leader)
            rate = min(rate, float(self.broker_cfg.get(leader, {}).get(LEADER_RATE, UNTHROTTLED))
                       / max(1, share))
        return rate

    def copy_rate(self, tp: TopicPartition) -> float:
        return self._rate(tp, self.moving[tp]) if tp in self.moving else 0.0

    def _advance(self) -> None:
        now = self.clock.now()
        dt = 0.0 if self._last is None else now - self._last
        self._last = now
        for tp in sorted(self.moving, key=str):
            r = self.moving[tp]
            part = self.parts[tp]
            r.copied += self._rate(tp, r) * dt
            if r.copied >= part.size:
                del self.moving[tp]
                part.replicas = r.target
                part.isr = tuple(b for b in r.target if b not in self.dead) or r.target
                if part.leader not in part.isr:
                    part.leader = part.isr[0]
                self.completed.append(tp)

    def _check_alive(self, ids: Iterable[int]) -> None:
        dead = sorted(set(ids) & self.dead)
        if dead:
            raise ClusterError(f"broker(s) {dead} unreachable")

    # ---- KafkaAdmin --------------------------------------------------------------------------
    def brokers(self) -> list[BrokerInfo]:
        return self._call("brokers", None, lambda: [
            BrokerInfo(b, "localhost", 9000 + b, "a" if b % 2 else "b")
            for b in self.broker_ids if b not in self.dead])  # type: ignore[return-value]

    def cordoned_brokers(self, broker_ids: Iterable[int]) -> frozenset[int]:
        return frozenset(set(broker_ids) & self.cordoned - self.dead)

    def quota_windows(self, broker_ids: Iterable[int]) -> dict[int, float]:
        return {b: self.quota_window_seconds[b] for b in broker_ids
                if b in self.quota_window_seconds and b not in self.dead}

    def registered_racks(self) -> dict[int, str | None]:
        return {b: "a" if b % 2 else "b" for b in self.broker_ids}  # dead ones stay registered

    def partitions(self, topics: Iterable[str] | None = None) -> list[PartitionInfo]:
        wanted = None if topics is None else set(topics)

        def read() -> list[PartitionInfo]:
            missing = sorted((wanted or set()) - {tp.topic for tp in self.parts})
            if missing:
                raise TopicGone(f"topic {missing[0]!r} does not exist")
            out = []
            for tp in sorted(self.parts, key=lambda k: (k.topic, k.partition)):
                if wanted is not None and tp.topic not in wanted:
                    continue
                p = self.parts[tp]
                r = self.moving.get(tp)
                replicas = p.replicas if r is None else r.target + r.removing
                isr = tuple(b for b in p.isr if b not in self.dead)
                # a dead leader's partition elects the first live replica of its ISR
                leader = p.leader if p.leader not in self.dead else next(iter(isr), None)
                out.append(PartitionInfo(tp.topic, tp.partition, replicas, isr, leader))
            return out
        return self._call("partitions", wanted, read)  # type: ignore[return-value]

    def log_dir_sizes(self, broker_ids: Iterable[int]) -> dict[tuple[TopicPartition, int], int]:
        ids = list(broker_ids)

        def read() -> dict[tuple[TopicPartition, int], int]:
            self._check_alive(ids)
            sizes = {}
            for tp, p in self.parts.items():
                for b in ids:
                    if b in p.replicas:
                        sizes[(tp, b)] = p.size
                    elif tp in self.moving and b in self.moving[tp].adding:
                        sizes[(tp, b)] = int(self.moving[tp].copied)
            return sizes
        return self._call("log_dir_sizes", ids, read)  # type: ignore[return-value]

    def broker_configs(self, broker_ids: Iterable[int], names: Sequence[str]) -> dict[
        int, dict[str, str | None]
    ]:
        ids = list(broker_ids)

        def read() -> dict[int, dict[str, str | None]]:
            self._check_alive(ids)
            return {b: {n: self.broker_cfg.get(b, {}).get(n) for n in names} for b in ids}
        return self._call("broker_configs", ids, read)  # type: ignore[return-value]

    def topic_configs(self, topics: Iterable[str], names: Sequence[str]) -> dict[
        str, dict[str, str | None]
    ]:
        ts = list(topics)

        def read() -> dict[str, dict[str, str | None]]:
            out = {}
            for t in ts:
                left, before = self._stale.get(t, (0, {}))
                if left:
                    self._stale[t] = (left - 1, before)
                values = before if left else self.topic_cfg.get(t, {})
                out[t] = {n: values.get(n) for n in names}
            return out
        return self._call("topic_configs", ts, read)  # type: ignore[return-value]

    def alter_broker_configs(self, changes: Mapping[int, ConfigChanges]) -> None:
        def write() -> None:
            self._check_alive(changes)
            for b, values in changes.items():
                _alter(self.broker_cfg.setdefault(b, {}), values)
        self._call("alter_broker_configs", {b: dict(v) for b, v in changes.items()}, write)

    def alter_topic_configs(self, changes: Mapping[str, ConfigChanges]) -> None:
        def write() -> None:
            for t, values in changes.items():
                if not any(tp.topic == t for tp in self.parts):
                    raise TopicGone(f"topic {t!r} does not exist (while trying to alter configs)")
                if self.stale_topic_reads:
                    self._stale[t] = (self.stale_topic_reads, dict(self.topic_cfg.get(t, {})))
                _alter(self.topic_cfg.setdefault(t, {}), values)
        self._call("alter_topic_configs", {t: dict(v) for t, v in changes.items()}, write)

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> None:
        def write() -> None:
            for tp, target in targets.items():
                part = self.parts[tp]
                if target is None:
                    r = self.moving.pop(tp, None)
                    if r is not None:  # KIP-455 cancel, as Kafka does it: the original replicas
                        # in the in-flight order (target first), so the preferred leader moves
                        part.replicas = tuple(b for b in r.target + r.removing
                                              if b not in r.adding)
                        part.isr = tuple(b for b in part.replicas if b in part.isr)
                elif tp not in self.moving and set(target) == set(part.replicas):
                    part.replicas = tuple(target)  # order only: nothing to copy, done at once
                elif tp not in self.moving and tuple(target) != part.replicas:
                    self.moving[tp] = _Reassignment(part.replicas, tuple(target))
        self._call("alter_partition_reassignments", dict(targets), write)

    def list_partition_reassignments(self) -> dict[TopicPartition, ReassignmentState]:
        return self._call("list_partition_reassignments", None, lambda: {  # type: ignore[return-value]
            tp: ReassignmentState(r.target + r.removing, r.adding, r.removing)
            for tp, r in self.moving.items()})

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)

        def write() -> None:
            for tp in tps:
                p = self.parts[tp]
                if p.replicas[0] in p.isr:
                    p.leader = p.replicas[0]
        self._call("elect_preferred_leaders", tps, write)

    def close(self) -> None:
        pass

    # ---- test helpers ------------------------------------------------------------------------
    def replicas(self) -> dict[str, tuple[int, ...]]:
        return {str(tp): p.replicas for tp, p in self.parts.items()}

    def configs(self) -> tuple[dict[int, dict[str, str]], dict[str, dict[str, str]]]:
        """Every dynamic config, empty entries dropped (to compare before/after)."""
        brokers = {b: dict(v) for b, v in self.broker_cfg.items() if v}
        topics = {t: dict(v) for t, v in self.topic_cfg.items() if v}
        return brokers, topics


def _alter(target: dict[str, str], values: ConfigChanges) -> None:
    for name, value in values.items():
        if value is None:
            target.pop(name, None)
        else:
            target[name] = value


def _listed(value: str | None, partition: int, broker: int) -> bool:
    entries = parse_replica_list(value)
    return entries == ("*",) or f"{partition}:{broker}" in entries


class FakeMetrics:
    """Prometheus as the executor asks it: base traffic per broker plus the copies in flight."""

    def __init__(self, admin: FakeAdmin, queries: GateQueries,
                 base: Mapping[int, float] | None = None) -> None:
        self.admin = admin
        self.queries = queries
        self.base = dict(base or {b: 100_000.0 for b in admin.broker_ids})
        self.extra: dict[int, float] = {}  # added traffic, e.g. a noisy neighbour
        self.down = False
        self.down_until: float | None = None  # outage ends at this clock time
        self.p99 = 5.0  # every broker's produce p99, ms, but those in produce_p99
        # the SLO guard's indicators per broker, where a test sets them (else healthy values)
        self.produce_p99: dict[int, float] = {}
        self.fetch_p99: dict[int, float] = {}
        self.flush_p95: dict[int, float] = {}
        self.urp: dict[int, float] = {}
        self.lag: float | None = None  # no lag series unless a test gives one
        # reassignment bytes/s into a broker over a recent window, besides the copies now
        self.recent_copies: dict[int, float] = {}
        # brokers Prometheus has no network series of yet (a broker not scraped yet), until
        # the clock reaches `scraped_from`
        self.unscraped: set[int] = set()
        self.scraped_from = float("inf")
        self.queries_seen = 0

    def _network(self, direction: str) -> list[tuple[dict[str, str], float]]:
        admin = self.admin
        if admin.clock.now() >= self.scraped_from:
            self.unscraped = set()
        values = {b: self.base.get(b, 0.0) + self.extra.get(b, 0.0)
                  for b in admin.broker_ids if b not in admin.dead | self.unscraped}
        for tp, r in admin.moving.items():
            rate = admin.copy_rate(tp)
            brokers = r.adding if direction == "in" else (admin.parts[tp].leader,)
            for b in brokers:
                if b in values:
                    values[b] += rate
        return [({"broker_id": str(b), "rack": "x"}, v) for b, v in sorted(values.items())]

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        self.queries_seen += 1
        if self.down_until is not None and self.admin.clock.now() >= self.down_until:
            self.down, self.down_until = False, None
        if self.down:
            raise MetricsError("Prometheus at http://fake:9090 is unreachable")
        q = self.queries
        if promql == q.render(q.net_in):
            return self._network("in")
        if promql == q.render(q.net_out):
            return self._network("out")
        if promql in (q.render(q.traffic_in), q.render(q.traffic_out)):
            return [({"broker_id": str(b)}, v) for b, v in sorted(self.base.items())]
        if promql == q.render(q.produce_p99_ms):
            return self._per_broker(self.p99, self.produce_p99)
        if promql == q.render(q.fetch_p99_ms):
            return self._per_broker(0.0, self.fetch_p99)
        if promql == q.render(q.flush_p95_ms):
            return self._per_broker(1.0, self.flush_p95)
        if promql == q.render(q.under_replicated):
            return self._per_broker(0.0, self.urp)
        if promql.startswith(promql_prefix(q.reassignment_in)):  # any window
            copies = {int(r["broker_id"]): v for r, v in self._network("in")}
            return [({"broker_id": str(b)}, self.recent_copies.get(b, 0.0)
                     + copies[b] - self.base.get(b, 0.0) - self.extra.get(b, 0.0))
                    for b in sorted(copies)]
        if promql == q.render(q.consumer_lag):
            return [] if self.lag is None else [({}, self.lag)]
        raise AssertionError(f"unexpected query {promql}")

    def _per_broker(self, usual: float, special: Mapping[int, float]
                    ) -> list[tuple[dict[str, str], float]]:
        return [({"broker_id": str(b)}, special.get(b, usual))
                for b in sorted(self.admin.broker_ids) if b not in self.admin.dead]


def promql_prefix(template: str) -> str:
    """A template rendered up to its rate window (the part every window shares)."""
    return template.split("{window}")[0].format(selector="", comma="")


class MemorySink:
    """A journal sink in memory, keeping the JSON-ready records."""

    def __init__(self) -> None:
        self.records: list[dict[str, object]] = []
        self.cancel = False

    def append(self, record: dict[str, object]) -> None:
        self.records.append(record)

    def cancel_requested(self) -> bool:
        return self.cancel

    def clear_cancel_request(self) -> None:
        self.cancel = False


# ---- a small world shared by the run-loop tests ----------------------------------------------
MB = 1_000_000


def standard_moves() -> list[Move]:
    """Three data moves (one per broker pair, in order) on a 4-broker cluster."""
    return [
        Move("orders", 0, (1, 2), (3, 2), 30 * MB),
        Move("orders", 1, (2, 3), (2, 4), 20 * MB),
        Move("events", 0, (3, 1), (1, 4), 10 * MB),
    ]


@dataclass
class World:
    clock: FakeClock
    admin: FakeAdmin
    metrics: FakeMetrics
    sink: MemorySink
    config: ExecutorConfig
    plan: ExecutionPlan
    events: list[Event] = field(default_factory=list)
    hooks: list[Callable[[World, Event], None]] = field(default_factory=list)

    def ports(self) -> Ports:
        return Ports(self.admin, self.metrics, self.clock)

    def reporter(self, event: Event) -> None:
        self.events.append(event)
        for hook in list(self.hooks):
            hook(self, event)

    def open_sink(self, header: dict[str, object]) -> MemorySink:
        self.sink.append(header)
        return self.sink

    def messages(self, kind: EventKind) -> list[str]:
        return [e.message for e in self.events if e.kind is kind]


def make_world(moves: Sequence[Move] | None = None, **config: Any) -> World:
    clock = FakeClock()
    admin = FakeAdmin(clock)
    moves = list(standard_moves() if moves is None else moves)
    for m in moves:
        admin.add(m.topic, m.partition, m.current, m.size_bytes)
    admin.add("other", 0, (1, 2, 3), 5 * MB)  # never moved
    queries = GateQueries()
    settings: dict[str, Any] = {"max_bytes_per_sec": 10 * MB, "poll_seconds": 1.0,
                                "stall_intervals": 5, "gate": GatePolicy(consecutive=2)}
    settings.update(config)
    return World(clock, admin, FakeMetrics(admin, queries), MemorySink(),
                 ExecutorConfig(**settings), ExecutionPlan(tuple(moves)))


class FlakyAdmin(FakeAdmin):
    """A cluster whose admin calls fail (ClusterError) while `failing` is set."""

    failing: int = 0  # fail this many calls, then recover

    def _call(self, name: str, args: object, effect: Callable[[], object]) -> object:
        if self.failing > 0:
            self.failing -= 1
            raise ClusterError(f"timed out calling {name}")
        return super()._call(name, args, effect)
