"""The SLO guard's effects: read the indicators while moves copy, journal the AIMD step
(executor.slo decides it), and set the guarded rates on the moves in flight."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from executor.config import Event, EventKind, ExecutorConfig, Ports, Reporter
from executor.flows import held_ends
from executor.journal import Journal
from executor.readings import read_slo, under_replicated_near
from executor.slo import (
    STALE_SECONDS,
    UNDER_REPLICATED,
    SloReading,
    Unchanged,
    breaches,
    next_levels,
    without_stale,
)
from executor.state import MoveState
from executor.steps import MoveDriver
from kafka_rebalance.core.errors import ClusterError, MetricsError
from planner.result import Move

S = MoveState
# A move whose throttle is set (its rates are the ones a level change must reach).
THROTTLED = frozenset({S.SUBMITTED, S.COPYING, S.VERIFYING})


class SloGuard:
    """Every `slo.every_seconds` while a move copies: one AIMD step over the brokers at the
    ends of the copies (and those still below the cap), journaled before it is applied."""

    def __init__(self, ports: Ports, config: ExecutorConfig, journal: Journal,
                 driver: MoveDriver, reporter: Reporter) -> None:
        self.ports, self.config, self.journal = ports, config, journal
        self.driver, self.report = driver, reporter
        self.next_at: float | None = None
        self.told: set[str] = set()  # what the operator was told once (absent series, outage)
        # the indicators before this process's first copy: the cluster's own normal
        self.baseline: SloReading | None = None
        self.unchanged: Unchanged = {}  # each latency's last value and since when (slo)

    def tick(self, active: Sequence[Move]) -> None:
        """Take a step when one is due; a copy's first step comes one interval into it."""
        policy = self.config.slo
        run = self.journal.run
        copying = [m for m in active if run.state_of(m.name) is S.COPYING]
        if not policy.enabled or not policy.watched():
            return
        if self.baseline is None and not copying:
            self._read_baseline(active)
        if not copying:
            self.next_at = None
            return
        now = self.ports.clock.now()
        if self.next_at is None:
            self.next_at = now + policy.every_seconds
            return
        if now < self.next_at:
            return
        self.next_at = now + policy.every_seconds
        brokers = {b for m in copying for b in self._brokers(m)} | set(run.guard_levels)
        try:
            reading = self._read(active)
        except MetricsError as exc:
            self._once("outage", f"SLO guard: metrics unavailable ({exc}); rates kept as they "
                                 "are until they answer")
            return
        self.told.discard("outage")
        reading, self.unchanged, stale = without_stale(reading, self.unchanged, now)
        for what in stale:
            self._once(f"stale {what}", f"SLO guard: {what} has not changed for "
                                        f"{STALE_SECONDS:.0f} s (no new requests there?); not "
                                        "judged on it until it moves")
        for name in sorted(reading.absent):
            self._once(name, f"SLO guard: no series for {name.replace('_', ' ')} "
                             "(see --queries); not guarded on it")
        cap = self.config.max_bytes_per_sec
        changes = next_levels(policy, cap, run.guard_levels,
                              breaches(policy, reading, brokers, self.baseline), brokers,
                              self._in_force(active))
        if not changes:
            return
        levels = dict(run.guard_levels)
        for change in changes:
            levels[change.broker] = change.new
        levels = {b: v for b, v in levels.items() if v < cap}
        self.journal.guard(levels, [c.text() for c in changes], now)
        for change in changes:
            self.report(Event(EventKind.GUARD, f"SLO guard: {change.text()}",
                              state="lowered" if change.lowered else "raised",
                              broker=change.broker, rate=change.new))
        touched = {c.broker for c in changes}
        for move in active:
            record = run.moves[move.name]
            if record.state in THROTTLED and record.throttle is not None \
                    and touched & set(record.throttle.broker_rates):
                problems = self.driver.apply_throttle(record.throttle)
                if problems:
                    self.driver.enter(move, S.CANCELLING,
                                      "throttle read back differs: " + "; ".join(problems))

    def _read(self, active: Sequence[Move]) -> SloReading:
        """One reading; with under-replication watched, the cluster's metadata says which
        brokers it is on (left cluster-wide when the metadata does not answer)."""
        watched = self.config.slo.watched()
        reading = read_slo(self.ports.metrics, self.config.queries, watched)
        if UNDER_REPLICATED not in watched:
            return reading
        if reading.under_replicated == 0:
            # the brokers count none: spare the cluster a describe of every partition
            return replace(reading, under_replicated_near={})
        try:
            live = frozenset(b.id for b in self.ports.admin.brokers())
            adding = {tp: r.adding for tp, r in
                      self.ports.admin.list_partition_reassignments().items()}
            near = under_replicated_near(self.ports.admin.partitions(), live,
                                         frozenset(m.key for m in active), adding)
        except ClusterError as exc:
            self._once("metadata", f"SLO guard: cluster metadata unavailable ({exc}); "
                                   "under-replication counts cluster-wide meanwhile")
            return reading
        self.told.discard("metadata")
        return replace(reading, under_replicated_near=near,
                       absent=reading.absent - {UNDER_REPLICATED})  # the metadata tells

    def _read_baseline(self, active: Sequence[Move]) -> None:
        """The indicators before any copy of this process (once; left unread while
        Prometheus does not answer, and then the flags alone judge)."""
        try:
            self.baseline = self._read(active)
        except MetricsError:
            return
        before = self.baseline
        if before.under_replicated:
            self.report(Event(EventKind.NOTE, f"SLO guard: {before.under_replicated} "
                              "partition(s) under-replicated before the run; the guard counts "
                              "only more than that"))

    def _in_force(self, active: Sequence[Move]) -> dict[int, int]:
        """Per broker, the highest rate the throttles of the moves in flight set on it."""
        rates: dict[int, int] = {}
        for move in active:
            record = self.journal.run.moves[move.name]
            if record.state in THROTTLED and record.throttle is not None:
                for broker, by_name in record.throttle.broker_rates.items():
                    rates[broker] = max(rates.get(broker, 0), *by_name.values())
        return rates

    def _brokers(self, move: Move) -> set[int]:
        """The brokers at the move's ends."""
        return {b for b, _ in held_ends(move, self.journal.run.moves[move.name].baseline)}

    def _once(self, key: str, message: str) -> None:
        if key not in self.told:
            self.told.add(key)
            self.report(Event(EventKind.NOTE, message))
