"""Which pending moves start now: the run loop's scheduling (executor.flows holds the rules of
ends and quota windows, executor.decide the turn each move takes at each check).

One at a time, the next move in plan order starts once the previous is done, or takes the
previous move's brokers over as its copy ends. Side by side, the busiest brokers' moves go
first, as many as the ends allow. A move whose receiver just received a copy waits for Kafka's
quota window; every start reads the live leader (the sender) first.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace

from executor.config import Event, EventKind, ExecutorConfig, Ports, Reporter
from executor.decide import (
    Turn,
    hands_over,
    overrun,
    turn_after_start,
    turn_before_ends,
    turn_for_ends,
    turn_for_window,
)
from executor.flows import (
    SCAN_LIMIT,
    Direction,
    End,
    QuotaWindows,
    busiest_first,
    end_share,
    fits,
    held_ends,
    move_ends,
    remaining_load,
)
from executor.gates import NetworkSample
from executor.journal import Journal
from executor.readings import copies_in_over
from executor.state import THROTTLES_MAY_BE_SET, MoveState
from executor.steps import MoveDriver
from kafka_rebalance.core.errors import MetricsError, TopicGone
from kafka_rebalance.core.ports import KafkaAdmin
from planner.result import Move
from topology.model import TopicPartition

S = MoveState
_STARTED_COPY = frozenset({S.THROTTLING, S.SUBMITTED, S.COPYING})
_NOT_EXPOSED = 1 << 30  # sorts after any count of in-sync replicas
# A move whose copy ends within this many polls (and at least HANDOVER_MIN_SECONDS) at the cap
# hands its ends to the next move: the two copies share the receiver's quota for a moment
# instead of leaving a gap that Kafka's quota window would let the next copy make up at full
# speed.
# Leadership-only moves (replica order and a preferred election, no copy) start together, this
# many at a time, once no copy is in flight: they need no throttle, no gate and no end.
LEADERSHIP_BATCH = 100
HANDOVER_POLLS = 3
HANDOVER_MIN_SECONDS = 2.0
# A window's proof of no copies looks this much further back: the last scrapes may lag.
PROOF_MARGIN_SECONDS = 5.0


class MoveStarter:
    """Starts moves for one run: its quota windows, order and notes live here."""

    def __init__(self, ports: Ports, config: ExecutorConfig, journal: Journal,
                 driver: MoveDriver, reporter: Reporter) -> None:
        self.ports, self.config, self.journal, self.driver = ports, config, journal, driver
        self.report = reporter
        # Until it has watched for a window, a process cannot tell which ends carried a copy
        # (a run taken over, or one started right after another run on the same brokers).
        self.quota = QuotaWindows(config.quota_window, ports.clock.now())
        self._told_waiting: set[str] = set()
        self._order: list[Move] | None = None  # side by side: busiest brokers' moves first
        self._proved = False
        # brokers of moves that failed in this session: moves through them do not start
        self.blocked: frozenset[int] = frozenset()
        # moves healing partitions under-replicated by offline brokers: in-sync replicas left
        # (preflight.exposed_moves); they start before every other, the fewest left first
        self.exposed: Mapping[str, int] = {}

    def _prove_clean(self) -> None:
        """Once, before the first start: the receivers Prometheus shows carried no copy over
        the last window (and a margin of a few scrapes) start at once; the others wait a
        window, as when Prometheus cannot tell."""
        self._proved = True
        window = self.quota.window_seconds
        if window <= 0:
            return
        span = window + PROOF_MARGIN_SECONDS
        try:
            copies = copies_in_over(self.ports.metrics, self.config.queries, span)
        except MetricsError:
            return
        clean = sorted(b for b, rate in copies.items() if rate == 0)
        self.quota = replace(self.quota, proven_clean=frozenset(
            (b, Direction.IN) for b in clean))
        dirty = sorted(b for b, rate in copies.items() if rate > 0)
        if dirty:
            self._note(f"broker(s) {dirty} received copies within the last {span:g} s "
                       "(Prometheus): moves into them wait for Kafka's quota window")

    def _note(self, message: str) -> None:
        self.report(Event(EventKind.NOTE, message))

    def _ends(self, move: Move) -> frozenset[End]:
        return held_ends(move, self.journal.run.moves[move.name].baseline)

    def watch_quotas(self) -> None:
        """Note the ends carrying this run's copies now (their quota windows fill)."""
        now = self.ports.clock.now()
        for move in self.journal.run.in_state(THROTTLES_MAY_BE_SET):
            if not move.leadership_only:
                self.quota.use(self._ends(move), now)

    def _candidates(self) -> list[Move]:
        """Pending moves in the order they may start: the plan's one at a time; side by side,
        the moves of the brokers with the most bytes to carry first (executor.schedule times
        the same order)."""
        if self.config.concurrency == 1:
            return self._exposed_first(self.journal.run.in_state(frozenset({S.PENDING})))
        if self._order is None:
            unfinished = self.journal.run.unfinished
            self._order = self._exposed_first(busiest_first(unfinished,
                                                             remaining_load(unfinished)))
        state = self.journal.run.state_of
        pending = (m for m in self._order if state(m.name) is S.PENDING)
        return list(itertools.islice(pending, SCAN_LIMIT))

    def _exposed_first(self, moves: list[Move]) -> list[Move]:
        if not self.exposed:
            return moves
        return sorted(moves, key=lambda m: self.exposed.get(m.name, _NOT_EXPOSED))

    def _handing_over(self, active: list[Move]) -> set[str]:
        """Moves whose copy ends within the hand-over lead, at its own pace: their ends may
        pass to a next move now, so that the receiver's quota sees one unbroken copy
        (executor.flows)."""
        state = self.journal.run.state_of
        lead = max(HANDOVER_POLLS * self.config.poll_seconds, HANDOVER_MIN_SECONDS)
        return {m.name for m in active
                if hands_over(state(m.name), m.leadership_only,
                               m.name in self.driver.handed_over, left := self.driver.bytes_left(m),
                               self.config.max_bytes_per_sec, lead, self._copy_rate(m, left))}

    def _copy_rate(self, move: Move, left: int | None) -> float | None:
        """The mean rate of `move`'s copy so far, `left` bytes still to copy (None before
        HANDOVER_MIN_SECONDS of it, or when its bytes are unread)."""
        since = self.journal.run.timeline.of(move.name).copying_at
        if left is None or since is None:
            return None
        seconds = self.ports.clock.now() - since
        return (move.bytes_moved - left) / seconds if seconds >= HANDOVER_MIN_SECONDS else None

    def start_moves(self, active: list[Move]) -> None:
        """Start what may start now, given the moves in flight (`active`)."""
        if any(m.leadership_only for m in active):
            return  # a batch of leadership changes is under way; what follows starts after it
        if not self._proved:
            self._prove_clean()
        one_at_a_time = self.config.concurrency == 1
        ending = self._handing_over(active)
        holders: dict[End, dict[str, float]] = {}
        for m in active:
            given = self.driver.handed_over.get(m.name, ("", frozenset()))[1]
            for end in self._ends(m) - given:  # ends handed over are the next move's
                holders.setdefault(end, {})[m.name] = end_share(m, end)
        # One at a time, a move whose copy is ending hands its brokers to the next (two copies
        # share the receiver's quota for a moment, no gap); with --concurrency N every move in
        # flight counts, so N is never exceeded
        finishing = ending | set(self.driver.handed_over) if one_at_a_time else set()
        slots = self.config.slots - sum(1 for m in active if m.name not in finishing)
        leaders = _Leaders(self.ports.admin)
        now = self.ports.clock.now()
        candidates = self._candidates()
        copying = any(not m.leadership_only for m in active)
        for index, move in enumerate(candidates):
            blocked = bool(self.blocked & {*move.current, *move.target})
            turn = turn_before_ends(slots=slots, blocked=blocked,
                                    leadership_only=move.leadership_only, copying=copying,
                                    one_at_a_time=one_at_a_time)
            if turn is Turn.LEADERSHIPS:
                self._start_leaderships(candidates[index:])
            if turn is Turn.SKIP:
                continue
            if turn is not None:
                return
            receivers = frozenset((b, Direction.IN) for b in move.added_brokers)
            if fits(move, receivers, holders, ending)[0]:  # known without the live leader
                ends = move_ends(move, leaders.of(move), leaders.live())
                free, taking = fits(move, ends, holders, ending)
            else:
                free, taking = False, None
            turn = turn_for_ends(free=free, takes_over=taking is not None,
                                 others_active=bool(active), one_at_a_time=one_at_a_time)
            if turn is Turn.SKIP:
                continue
            if turn is not None or self._past_finish_by(move):
                return
            carrying = frozenset(e for e in ends if holders.get(e))  # joined without a gap
            dirty = self.quota.dirty_receivers(move, ends, now, carrying)
            if dirty:
                self._tell_waiting(move, dirty, now)
            turn = turn_for_window(dirty=bool(dirty), one_at_a_time=one_at_a_time)
            if turn is Turn.HOLD:
                for end in ends:  # kept for it meanwhile
                    holders.setdefault(end, {})[move.name] = 1.0
                continue
            if turn is not None:
                return
            started = self.driver.start(move, ends, self._baselines_of(carrying, holders))
            turn = turn_after_start(started, one_at_a_time)
            if turn is Turn.SKIP:
                continue
            if turn is not None:
                return
            in_copy = self.journal.run.state_of(move.name) in _STARTED_COPY
            if taking is not None and in_copy:  # not a move its first steps cancelled
                self.driver.hand_over(taking, move, ends & self._ends(
                    self.journal.run.plan.move(taking)))
                ending.discard(taking)
            for end in ends:
                holders.setdefault(end, {})[move.name] = end_share(move, end)
            slots -= 1
            copying = True

    def _start_leaderships(self, candidates: list[Move]) -> None:
        """Start up to LEADERSHIP_BATCH leadership-only moves of `candidates` at once."""
        batch = [m for m in candidates if m.leadership_only
                 and not self.blocked & {*m.current, *m.target}][:LEADERSHIP_BATCH]
        if len(batch) > 1:
            self._note(f"{len(batch)} leadership-only moves start together (they copy "
                       "nothing: no throttle, no gate)")
        self.driver.start_leaderships(batch)

    def _baselines_of(self, ends: frozenset[End],
                      holders: Mapping[End, Mapping[str, float]]) -> NetworkSample | None:
        """The baseline of each end a move joins, from a move already on it: the network as it
        was before either copy."""
        if not ends:
            return None
        net_in: dict[int, float] = {}
        net_out: dict[int, float] = {}
        for broker, direction in ends:
            for name in holders[(broker, direction)]:
                baseline = self.journal.run.moves[name].baseline
                if baseline is None:
                    continue
                values = baseline.net_in if direction is Direction.IN else baseline.net_out
                target = net_in if direction is Direction.IN else net_out
                if broker in values:
                    target[broker] = values[broker]
                    break
        return NetworkSample(net_in, net_out)

    def _tell_waiting(self, move: Move, dirty: list[End], now: float) -> None:
        if move.name in self._told_waiting:
            return
        self._told_waiting.add(move.name)
        window = self.quota.window_seconds
        seen = all(end in self.quota.last_used for end in dirty)  # by this process
        since = (f"within the last {window:g} s" if seen or now - self.quota.since >= window
                 else f"before this process started watching {now - self.quota.since:.0f} s ago")
        names = ", ".join(f"broker {b}" for b, _ in dirty)
        left = self.quota.wait_left(dirty, now)
        up_to = f"up to {left:.0f} s" if left >= 1 else "under a second"
        self._note(f"{move.name} waits {up_to} for "
                   f"Kafka's replication quota window: {names} may have received a copy "
                   f"{since}, and a copy into a broker is held to the cap only once its window "
                   f"has been clean for {window:g} s")

    def _past_finish_by(self, move: Move) -> bool:
        """True (and the run stops starting moves) when `move`, copied at the cap, would end
        after `finish_by`: a maintenance window is not overrun by a move started late."""
        late = overrun(move.bytes_moved, self.config.max_bytes_per_sec,
                       self.ports.clock.now(), self.config.finish_by)
        if late is None:
            return False
        self.driver.stop_reason = (
            f"the window ends in {late.left_seconds:.0f} s and {move.name} needs about "
            f"{late.copy_seconds:.0f} s at the cap: not started; `rebalance resume` "
            "continues the run")
        self._note(self.driver.stop_reason)
        return True


class _Leaders:
    """Live partition leaders, read once per topic per poll and only for moves looked at."""

    def __init__(self, admin: KafkaAdmin) -> None:
        self.admin = admin
        self.by_topic: dict[str, dict[TopicPartition, int | None]] = {}
        self._live: frozenset[int] | None = None

    def live(self) -> frozenset[int]:
        """The live brokers (a partition without a leader copies from one of them)."""
        if self._live is None:
            self._live = frozenset(b.id for b in self.admin.brokers())
        return self._live

    def of(self, move: Move) -> int | None:
        if move.topic not in self.by_topic:
            try:
                partitions = self.admin.partitions([move.topic])
            except TopicGone:  # deleted since the plan: the move's first step says so
                partitions = []
            self.by_topic[move.topic] = {p.key: p.leader for p in partitions}
        return self.by_topic[move.topic].get(move.key)
