"""One move's steps: each state's side effect, idempotent, followed by the journaled next state.

`MoveDriver.advance` runs a move's steps until it has to wait for the cluster (copying, cooling
down) or ends. Every step first looks at the cluster, so redoing it after a crash is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from executor.config import Event, EventKind, ExecutorConfig, Ports, Reporter
from executor.decide import (
    Action,
    Cooling,
    Observation,
    Started,
    Step,
    Tracking,
    after_gate,
    after_revert,
    decide,
    revert_listed,
    without_gate,
)
from executor.flows import Direction, End, baseline_for, end_text, ends_of_baseline
from executor.gates import GateReading, NetworkSample, gate_decision, start_decision
from executor.journal import Journal, MoveRecord
from executor.readings import read_gate, read_network, read_traffic
from executor.slo import guarded
from executor.state import (
    REASSIGNMENT_MAY_BE_IN_FLIGHT,
    TERMINAL,
    MoveState,
    can_transition,
)
from executor.throttle import (
    BROKER_THROTTLE_CONFIGS,
    FOLLOWER_RATE,
    TOPIC_THROTTLE_CONFIGS,
    ConfigValues,
    RateLimits,
    ThrottlePlan,
    ThrottlePriors,
    adaptive_rates,
    apply_changes,
    check_applied,
    check_restored,
    follower_share,
    parse_rate,
    plan_throttle,
    rates_differ,
    restore_changes,
    uniform_rates,
)
from kafka_rebalance.core.errors import ClusterError, ExecutionError, MetricsError, TopicGone
from kafka_rebalance.core.names import visible
from kafka_rebalance.core.ports import PartitionInfo
from planner.result import Move
from topology.model import TopicPartition
from topology.units import rate_text

S = MoveState


# States in which a move's copy may be flowing (its ends busy with its bytes).
COPIES_IN_FLIGHT = frozenset({S.THROTTLING, S.SUBMITTED, S.COPYING, S.VERIFYING})


# AlterReplicaLogDirs' answers for a replica the broker does not hold yet: it keeps the dir
REMEMBERED = ("ReplicaNotAvailableError", "NotLeaderOrFollowerError")


# what restore_throttle says of a rate it could not put back because its broker is offline
OFFLINE_RESTORE = "could not restore (it is offline)"
READ_BACK_TRIES = 5  # reads of throttles just written before a difference counts
READ_BACK_PAUSE_SECONDS = 1.0


class MoveDriver:
    """Drives single moves through their states against the ports."""

    def __init__(self, ports: Ports, config: ExecutorConfig, journal: Journal,
                 reporter: Reporter) -> None:
        self.ports = ports
        self.config = config
        self.journal = journal
        self.report = reporter
        self.skip_gate = False  # set when the operator cancels: finishing moves skip the gate
        self.stop_reason = ""  # set when a step decides the run must not start more moves
        self.gone: set[str] = set()  # moves whose topic was deleted during the run
        self.tracking: dict[str, Tracking] = {}
        # move -> (the next move, the ends it took over): its gate is the next move's (volatile:
        # after a crash the gate runs as usual and waits for the next move's copy too)
        self.handed_over: dict[str, tuple[str, frozenset[End]]] = {}
        # leadership-only moves elect together once a poll (elect_waiting): waiting, elected
        # by that one request, and those left to elect on their own (the request failed)
        self._to_elect: dict[TopicPartition, Move] = {}
        self._elected: set[TopicPartition] = set()
        self._elect_alone: set[TopicPartition] = set()
        self._copies_watched: set[str] = set()  # moves whose copy this process has followed
        self._handlers: dict[MoveState, Callable[[Move], bool]] = {
            S.THROTTLING: self._throttle, S.SUBMITTED: self._submit, S.COPYING: self._copy,
            S.VERIFYING: self._verify, S.UNTHROTTLING: self._unthrottle,
            S.ELECTING: self._elect, S.COOLING_DOWN: self._cool, S.CANCELLING: self._cancel,
        }

    # ---- helpers -------------------------------------------------------------------------
    def _now(self) -> float:
        return self.ports.clock.now()

    def _record(self, move: Move) -> MoveRecord:
        return self.journal.run.moves[move.name]

    def _track(self, move: Move) -> Tracking:
        return self.tracking.setdefault(move.name, Tracking())

    def _event(self, kind: EventKind, move: Move, message: str, bytes_done: int = 0,
               state: str = "") -> None:
        plan = self.journal.run.plan
        index = plan.position(move.name)
        self.report(Event(kind, message, move.name, index, len(plan.moves), bytes_done,
                          move.bytes_moved, state))

    def enter(self, move: Move, state: MoveState, reason: str = "", *,
              throttle: ThrottlePlan | None = None, baseline: NetworkSample | None = None) -> None:
        """Journal the state change (durably, before its side effect) and report it."""
        self.journal.enter(move.name, state, self._now(), reason=reason, throttle=throttle,
                           baseline=baseline)
        if state is S.COPYING:
            self._copies_watched.add(move.name)
        self._event(EventKind.STATE, move, f"{move.name}: {state.value}"
                    + (f" ({reason})" if reason else ""), state=state.value)

    def _partition(self, move: Move) -> PartitionInfo | None:
        for p in self.ports.admin.partitions([move.topic]):
            if p.partition == move.partition:
                return p
        return None

    def read_throttles(self, plan: ThrottlePlan) -> tuple[
        Mapping[int, ConfigValues], ConfigValues
    ]:
        """The current broker and topic values of the configs `plan` touches."""
        admin = self.ports.admin
        brokers: Mapping[int, ConfigValues] = (
            admin.broker_configs(plan.brokers, BROKER_THROTTLE_CONFIGS) if plan.broker_rates
            else {})
        return brokers, self._topic_throttles(plan)

    def _topic_throttles(self, plan: ThrottlePlan) -> ConfigValues:
        topic = plan.priors.topic
        return self.ports.admin.topic_configs([topic], TOPIC_THROTTLE_CONFIGS).get(topic, {})

    def apply_throttle(self, plan: ThrottlePlan) -> list[str]:
        """Set `plan` (merging topic lists as they are now) and read it back: the differences.
        Its rates are capped by the SLO guard's levels (the journal keeps the plan's own
        rates, so the guard can raise them back)."""
        if plan.empty:
            return []
        levels = self.journal.run.guard_levels
        if levels:
            plan = replace(plan, broker_rates=guarded(plan.broker_rates, levels))
        admin = self.ports.admin
        brokers, topics = apply_changes(plan, self._topic_throttles(plan))
        # The topic lists first: a broker applies the cluster's metadata in order, so once each
        # broker describes a new rate of this plan (alter_broker_configs waits for that, asking
        # the broker itself) it holds the lists too. The other way round, the lists were only
        # known to be on whichever broker answered the topic's describe.
        if topics:
            admin.alter_topic_configs(topics)
        if brokers:
            admin.alter_broker_configs(brokers)
        return self._read_back(lambda: check_applied(plan, *self.read_throttles(plan)))

    def _read_back(self, differences: Callable[[], list[str]]) -> list[str]:
        """`differences` between what was written and what the cluster describes, asked again
        for a few seconds while there are any: a topic's configs are described by whichever
        broker answers, which may not have applied the change yet (a restore that alters no
        broker rate, all kept for the move that took them over, waits on no broker)."""
        for _ in range(READ_BACK_TRIES - 1):
            found = differences()
            if not found:
                return found
            self.ports.clock.sleep(READ_BACK_PAUSE_SECONDS)
        return differences()

    def shared_rates(self, move_name: str, *, with_ended: bool = False
                     ) -> dict[tuple[int, str], tuple[str | None, int]]:
        """Broker rates other moves of this run have set and will put back themselves:
        (broker, config) -> (the value before the run, the rate in force). A move that has
        ended holds nothing: what its restore could not put back (a rate on a broker that was
        offline) is `clear-throttles`' to put back, and a rate it left to a move still going
        is that move's to put back now (else each would leave it to the other, on live
        brokers, in a run that completes). `with_ended`: ended moves' rates too, for the value
        before the run a new move is to put back (a rate left is not the operator's)."""
        run = self.journal.run
        shared: dict[tuple[int, str], tuple[str | None, int]] = {}
        for name, record in run.moves.items():
            if (name == move_name or not record.throttles_left or record.throttle is None
                    or (run.state_of(name) in TERMINAL and not with_ended)):
                continue
            plan = record.throttle
            for b, rates in plan.broker_rates.items():
                for config, rate in rates.items():
                    shared.setdefault((b, config), (plan.priors.brokers.get(b, {}).get(config),
                                                    rate))
        return shared

    def restore_throttle(self, plan: ThrottlePlan, *, all_moves: bool = False,
                         topic_gone: bool = False) -> list[str]:
        """Undo `plan` exactly and read back; the differences (or why it could not be done).
        A rate another move still holds stays (that move puts it back), unless `all_moves`
        are being restored together (clear-throttles). When the move's topic was deleted
        (`topic_gone`), its configs went with it: only the broker rates are put back, and
        there is nothing of the topic to read back.

        The topic lists go first, then each broker on its own: a dead broker (its configs are
        written through it) leaves only its own rate behind for `clear-throttles` once it is
        back, not the live brokers' rates too.
        """
        if plan.empty:
            return []
        admin = self.ports.admin
        keep = frozenset() if all_moves else frozenset(self.shared_rates(plan.move))
        try:
            brokers, topics = restore_changes(
                plan, {} if topic_gone else self._topic_throttles(plan), keep)
        except ClusterError as exc:
            return [f"could not restore throttles ({exc})"]
        problems = []
        if topics and not topic_gone:
            try:
                admin.alter_topic_configs(topics)
            except ClusterError as exc:
                problems.append(f"topic {plan.priors.topic}: could not restore ({exc})")
        live = self._live()
        for broker, changes in sorted(brokers.items()):
            if broker not in live:  # its configs are written through it: a call would time out
                problems.append(f"broker {broker}: {OFFLINE_RESTORE}")
                continue
            try:
                admin.alter_broker_configs({broker: changes})
            except ClusterError as exc:
                problems.append(f"broker {broker}: could not restore ({exc})")
        if problems or topic_gone:
            return problems
        try:
            return self._read_back(
                lambda: check_restored(plan, *self.read_throttles(plan), keep))
        except ClusterError as exc:
            return [f"could not read the restored throttles back ({exc})"]

    # ---- starting --------------------------------------------------------------------------
    def _joined_rates(self, move: Move) -> dict[tuple[int, str], int]:
        """The rates in force that `move` keeps: another move's. A receiver it shares with a
        move that adds several replicas carries both parts of the cap (at most the cap)."""
        cap = self.config.max_bytes_per_sec
        shared = self.shared_rates(move.name)
        kept = {key: rate for key, (_, rate) in shared.items()}
        for b in move.added_brokers:
            held = kept.get((b, FOLLOWER_RATE))
            if held is not None and held < cap:
                operator = parse_rate(shared[(b, FOLLOWER_RATE)][0])  # never loosened
                limit = min(cap, operator) if operator is not None and operator > 0 else cap
                kept[(b, FOLLOWER_RATE)] = max(held, min(limit, held + follower_share(move, cap)))
        return kept

    def bytes_left(self, move: Move) -> int | None:
        """Bytes `move` still has to copy, from its last progress reading (None: not read)."""
        track = self.tracking.get(move.name)
        if track is None or track.last_progress is None or track.last_progress[0] < 0:
            return None
        return max(0, move.bytes_moved - track.last_progress[0])

    def hand_over(self, previous: str, following: Move, ends: frozenset[End]) -> None:
        """`following` took over `ends` from `previous` while its copy ends: on those ends the
        gate after `previous` is the one after `following` (its baseline carries on); the gate
        after `previous` watches only the rest."""
        self.handed_over[previous] = (following.name, ends)
        self._event(EventKind.NOTE, following,
                    f"{following.name} takes over from {previous} as its copy ends: "
                    + ", ".join(end_text(e) for e in sorted(ends))
                    + " keep copying without a gap")

    def start(self, move: Move, ends: frozenset[End],
              inherited: NetworkSample | None = None) -> Started:
        """Read the baseline of the move's ends and the prior configs, journal them, and
        throttle. Ends taken over from a move whose copy is ending keep that move's baseline
        (`inherited`): the network as it was before either copy. A move whose own brokers
        have no network series yet (a broker Prometheus has not scraped) is held alone; when
        Prometheus cannot answer at all, every start is."""
        if move.leadership_only:
            self.start_leaderships([move])
            return Started.STARTED
        ins = sorted(b for b, d in ends if d is Direction.IN)
        outs = sorted(b for b, d in ends if d is Direction.OUT)
        try:
            network = read_network(self.ports.metrics, self.config.queries, {*ins, *outs})
            rates = self.rates(move)
        except MetricsError as exc:
            network, rates = None, None
            reading = GateReading(None, unavailable=str(exc))
        else:
            reading = GateReading(network)
        decision = start_decision(reading, ins, outs)
        if not decision.open or network is None or rates is None:
            self._event(EventKind.HOLD, move, f"{move.name} not started: {decision.reason}")
            return Started.HELD_ALL if network is None else Started.HELD_MOVE
        throttle = plan_throttle(move, self.priors(move), rates, self._joined_rates(move),
                                 self._offline(move))
        baseline = baseline_for(network, ends)
        if inherited is not None:
            baseline = NetworkSample({**baseline.net_in, **{
                b: v for b, v in inherited.net_in.items() if b in baseline.net_in}},
                {**baseline.net_out, **{
                    b: v for b, v in inherited.net_out.items() if b in baseline.net_out}})
        self.enter(move, S.THROTTLING, throttle=throttle, baseline=baseline)
        for note in throttle.notes:
            self._event(EventKind.NOTE, move, note)
        self.advance(move)
        return Started.STARTED

    def start_leaderships(self, moves: Sequence[Move]) -> None:
        """Start leadership-only `moves` together. A move that only reorders replicas copies
        nothing: no throttle, no baseline, no gate and no Prometheus are needed. Each is
        journaled as ever, their new replica orders submitted in one request. If that request
        fails, each move submits its own at its next step (a submit is idempotent) and names
        its own error."""
        submitting: list[tuple[Move, Step]] = []
        for move in moves:
            self.enter(move, S.THROTTLING, throttle=ThrottlePlan(
                move.name, ThrottlePriors({}, move.topic, {})))
            try:
                if self._throttle(move) and self._record(move).state is S.SUBMITTED:
                    submitting.append((move, self._submit_step(move)))
            except TopicGone:
                self._topic_gone(move)
        targets = {m.key: list(m.target) for m, step in submitting if step.action is Action.SUBMIT}
        try:
            self.ports.admin.alter_partition_reassignments(targets)
        except ClusterError:
            return
        for move, step in submitting:
            if self._take(move, step):
                self.advance(move)

    def elect_waiting(self) -> None:
        """One preferred election for every leadership-only move waiting in ELECTING (their
        next step takes it); if it fails, each elects on its own and names its own error."""
        keys = list(self._to_elect)
        self._to_elect.clear()
        if not keys:
            return
        try:
            self.ports.admin.elect_preferred_leaders(keys)
        except ClusterError:
            self._elect_alone.update(keys)
            return
        self._elected.update(keys)

    def _live(self) -> frozenset[int]:
        """The live brokers (read once per poll: executor.tickreads)."""
        return frozenset(b.id for b in self.ports.admin.brokers())

    def _offline(self, move: Move) -> frozenset[int]:
        """The move's current replicas on offline brokers (a dead broker it drains)."""
        return frozenset(move.current) - self._live()

    def rates(self, move: Move) -> RateLimits:
        cfg = self.config
        if not cfg.adaptive:
            return uniform_rates(move, cfg.max_bytes_per_sec)
        traffic_in, traffic_out = read_traffic(self.ports.metrics, cfg.queries)
        return adaptive_rates(move, cfg.max_bytes_per_sec, cfg.adaptive_floor_bytes_per_sec,
                              cfg.capacities, traffic_in, traffic_out)

    def priors(self, move: Move) -> ThrottlePriors:
        """The configs as they are, but a rate another move of this run holds: the value it
        had before the run (so that whichever move puts it back puts back the operator's)."""
        admin = self.ports.admin
        # an offline (leaving) broker gets no throttle
        brokers = sorted((set(move.current) | set(move.added_brokers)) & self._live())
        values = admin.broker_configs(brokers, BROKER_THROTTLE_CONFIGS)
        topic = admin.topic_configs([move.topic], TOPIC_THROTTLE_CONFIGS).get(move.topic, {})
        shared = self.shared_rates(move.name, with_ended=True)

        def prior(b: int, config: str) -> str | None:
            held = shared.get((b, config))
            return held[0] if held is not None else values.get(b, {}).get(config)

        return ThrottlePriors(
            {b: {n: prior(b, n) for n in BROKER_THROTTLE_CONFIGS} for b in brokers},
            move.topic, {n: topic.get(n) for n in TOPIC_THROTTLE_CONFIGS})

    # ---- stepping --------------------------------------------------------------------------
    def advance(self, move: Move) -> None:
        """Run `move`'s steps until it must wait for the cluster or reaches a terminal state."""
        while True:
            handler = self._handlers.get(self._record(move).state)
            try:
                if handler is None or not handler(move):
                    return
            except TopicGone:
                self._topic_gone(move)
                return

    def _topic_gone(self, move: Move) -> None:
        """The move's topic was deleted during the run (Kafka drops its reassignment with it):
        there is nothing left to move. The move's broker rates are restored (its topic's
        configs went with the topic) and it ends cancelled, or failed when a rate could not be
        restored; the run's other moves go on."""
        record = self._record(move)
        plan = record.throttle
        problems = [] if plan is None else self.restore_throttle(plan, topic_gone=True)
        reason = f"topic {move.topic} was deleted during the run: nothing is left to move"
        self.gone.add(move.name)
        if can_transition(record.state, S.CANCELLING):
            self.enter(move, S.CANCELLING, reason)
        if not self._restored_or_failed(move, problems, reason):
            return
        self.journal.throttles(move.name, False, self._now())
        self.enter(move, S.CANCELLED if can_transition(self._record(move).state, S.CANCELLED)
                   else S.FAILED, reason)

    def _throttle_plan(self, move: Move) -> ThrottlePlan:
        plan = self._record(move).throttle
        if plan is None:  # only a hand-edited journal gets here
            raise ExecutionError(f"the journal has no throttle record for {move.name} in state "
                                 f"{self._record(move).state.value}; it was edited or is corrupt")
        return plan

    def _take(self, move: Move, step: Step) -> bool:
        """Keep the step's tracking, journal its next state; True when the move moved on."""
        self.tracking[move.name] = step.tracking
        if step.next is None:
            return False
        self.enter(move, step.next, step.reason)
        return True

    def _decide(self, move: Move, seen: Observation) -> Step:
        return decide(self._record(move).state, move, seen, self._track(move),
                      self.config.stall_intervals, elect_leaders=self.config.elect_leaders)

    def _throttle(self, move: Move) -> bool:
        problems = self.apply_throttle(self._throttle_plan(move))
        return self._take(move, self._decide(move, Observation(problems=tuple(problems))))

    def _submit_step(self, move: Move) -> Step:
        live = self._partition(move)
        listed = move.key in self.ports.admin.list_partition_reassignments()
        return self._decide(move, Observation(listed=listed,
                                              replicas=live.replicas if live else None))

    def _submit(self, move: Move) -> bool:
        step = self._submit_step(move)
        if step.action is Action.SUBMIT:
            self._place_in_dirs(move)
            self.ports.admin.alter_partition_reassignments({move.key: list(move.target)})
        return self._take(move, step)

    def _place_in_dirs(self, move: Move) -> None:
        """Tell each JBOD broker that receives a replica which log dir to create it in (the
        plan's choice): a broker remembers the dir of a replica it does not hold yet
        (AlterReplicaLogDirs answers ReplicaNotAvailable then). A refusal only costs the
        choice: the broker then picks the dir itself."""
        dirs = self.journal.run.plan.log_dirs
        if dirs is None:
            return
        wanted = {(move.key, b): dirs.placements[(move.key, b)] for b in move.added_brokers
                  if (move.key, b) in dirs.placements}
        if not wanted:
            return
        answers = self.ports.admin.alter_replica_log_dirs(wanted)
        refused = {key: error for key, error in answers.items()
                   if error not in (None, *REMEMBERED)}
        for (_, broker), error in sorted(refused.items(), key=lambda item: item[0][1]):
            self._event(EventKind.NOTE, move, f"{move.name}: broker {broker} refused log dir "
                        f"{visible(wanted[(move.key, broker)])} ({error}); it picks the dir")

    def _copy(self, move: Move) -> bool:
        admin = self.ports.admin
        seen = Observation(watched=move.name in self._copies_watched)
        if move.key in admin.list_partition_reassignments():
            self._copies_watched.add(move.name)
            # a broker that must hold the partition once it is done; a leaving broker may be
            # offline (the drain of a dead broker): the reassignment completes without it.
            # One that keeps its replica must be in sync for Kafka to complete it: if it
            # dies now the move is reverted (if it dies once the copy is done, see
            # decide._verifying)
            dead = tuple(sorted(set(move.target) - self._live()))
            seen = Observation(listed=True, dead=dead)
            if not dead:
                seen = replace(seen, progress=self._progress(move))
                self._event(EventKind.PROGRESS, move, f"{move.name}: copying",
                            max(seen.progress[0], 0))
        step = self._decide(move, seen)
        if self._take(move, step):
            return True
        every = self.config.adaptive_every_polls
        if self.config.adaptive and step.tracking.copy_polls % every == 0:
            return self._adapt(move)
        return False

    def _adapt(self, move: Move) -> bool:
        """Re-derive adaptive rates from current headroom; journal, set and read back changes."""
        current = self._throttle_plan(move)
        try:
            rates = self.rates(move)
        except MetricsError:
            return False  # keep the rates in force; the gate will hold if this lasts
        shared = self.shared_rates(move.name)
        updated = plan_throttle(move, current.priors, rates,
                                {key: rate for key, (_, rate) in shared.items()},
                                self._offline(move))
        if not rates_differ(current, updated, self.config.adaptive_change):
            return False
        self.journal.update_throttle(move.name, updated, self._now())
        problems = self.apply_throttle(updated)
        if problems:
            self.enter(move, S.CANCELLING, "throttle read back differs: " + "; ".join(problems))
            return True
        self._event(EventKind.NOTE, move, f"{move.name}: adaptive rates now "
                    + ", ".join(f"broker {b} {n.split('.')[0]} rate {rate_text(v)}"
                                for b, r in updated.broker_rates.items() for n, v in r.items()))
        return False

    def _progress(self, move: Move) -> tuple[int, tuple[int, ...]]:
        live = self._partition(move)
        isr = tuple(sorted(live.isr)) if live else ()
        try:
            sizes = self.ports.admin.log_dir_sizes(move.added_brokers)
        except ClusterError:
            return -1, isr
        return sum(sizes.get((move.key, b), 0) for b in move.added_brokers), isr

    def _verify(self, move: Move) -> bool:
        live = self._partition(move)
        return self._take(move, self._decide(move, Observation(
            replicas=live.replicas if live else None, isr=tuple(live.isr) if live else ())))

    def _unthrottle(self, move: Move) -> bool:
        """Put the move's throttles back; a rate on a broker that went offline waits (the
        move is done, and its throttles stay journaled as left for clear-throttles)."""
        problems = self.restore_throttle(self._throttle_plan(move))
        waiting = tuple(p for p in problems if p.endswith(OFFLINE_RESTORE))
        step = self._decide(move, Observation(
            problems=tuple(p for p in problems if p not in waiting), waiting=waiting))
        moved = self._take(move, step)
        if moved and waiting and step.next is not S.FAILED:
            self.journal.throttles(move.name, True, self._now())
        return moved

    def _elect(self, move: Move) -> bool:
        if move.leadership_only and move.key not in self._elect_alone:
            if move.key not in self._elected:
                self._to_elect[move.key] = move  # elected with the others (elect_waiting)
                return False
            self._elected.discard(move.key)
            return self._take(move, self._decide(move, Observation()))
        self._elect_alone.discard(move.key)
        failure = ""
        try:
            self.ports.admin.elect_preferred_leaders([move.key])
        except ClusterError as exc:
            failure = str(exc)
        return self._take(move, self._decide(move, Observation(failure=failure)))

    def _cool(self, move: Move) -> bool:
        """The gate after a move (executor.decide.without_gate and after_gate decide). Samples
        are taken from the start of the cooldown, so a cluster that settles while the
        cooldown runs opens the gate the moment it ends; without a next move to protect, the
        gate is skipped (--final-gate keeps it)."""
        record = self._record(move)
        baseline = record.baseline or NetworkSample({}, {})
        carried = self._carried_by_others(move) if not move.leadership_only else frozenset()
        handed_over_to = None
        if carried and (baseline.net_in or baseline.net_out):
            baseline = baseline_for(baseline, ends_of_baseline(baseline) - carried)
            if not baseline.net_in and not baseline.net_out:
                handed_over_to = self.handed_over.get(move.name, ("the moves copying there",
                                                                  ""))[0]
        # a broker that died since the move started has no series left to settle: no wait
        # brings them back (the gate held on it until its timeout stopped the run)
        live, ends = self._live(), ends_of_baseline(baseline)
        if any(broker not in live for broker, _ in ends):
            baseline = baseline_for(baseline, {end for end in ends if end[0] in live})
        skipped = without_gate(Cooling(
            cancelled=self.skip_gate, leadership_only=move.leadership_only,
            handed_over_to=handed_over_to, final_gate=self.config.final_gate,
            copy_pending=any(not m.leadership_only
                             for m in self.journal.run.in_state(frozenset({S.PENDING})))))
        if skipped is not None:
            self.enter(move, S.DONE, skipped)
            return False
        policy = self.config.gate
        reading = read_gate(self.ports.metrics, self.ports.admin, self.config.queries,
                            {*baseline.net_in, *baseline.net_out},
                            want_p99=policy.produce_p99_max_ms is not None)
        moving = frozenset(m.key for m in self.journal.run.in_state(REASSIGNMENT_MAY_BE_IN_FLIGHT))
        track = self._track(move)
        decision = gate_decision(policy, baseline, reading, moving, track.gate_streak)
        self.tracking[move.name] = replace(track, gate_streak=decision.streak)
        left = self.config.cooldown_seconds - (self._now() - (record.cooldown_since or 0.0))
        cooling = f"; cooling down, {left:.0f} s left" if left > 0 else ""
        self._event(EventKind.GATE, move, f"gate after {move.name}: {decision.verdict.value}, "
                    f"{decision.reason}{cooling}", state=decision.verdict.value)
        outcome = after_gate(move.name, decision, left, self.config.gate_timeout_seconds)
        if outcome.stop:
            self.stop_reason = outcome.reason
        if outcome.done:
            self.enter(move, S.DONE, outcome.reason)
        return False

    def _carried_by_others(self, move: Move) -> frozenset[End]:
        """Ends another move of the run copies through now (taken over, or shared): that
        move's gate watches them, from a baseline read before either copy."""
        carried: set[End] = set()
        for other in self.journal.run.in_state(COPIES_IN_FLIGHT):
            record = self.journal.run.moves[other.name]
            if other.name != move.name and record.baseline is not None:
                carried |= ends_of_baseline(record.baseline)
        return frozenset(carried)

    def _cancel(self, move: Move) -> bool:
        admin = self.ports.admin
        submitted = self._record(move).submitted
        # a reassignment of a move never submitted is not this run's: it is left alone
        listed = admin.list_partition_reassignments().get(move.key) if submitted else None
        if listed is not None:
            if not revert_listed(move, listed.adding, listed.replicas):
                return False  # a reorder below is in flight: it copies nothing, let it end
            admin.alter_partition_reassignments({move.key: None})
            if move.key in admin.list_partition_reassignments():
                return False  # the controller is reverting it; look again next poll
        live = self._partition(move)
        track = self._track(move)
        step = after_revert(move, submitted=submitted, reverted_now=listed is not None,
                            replicas=None if live is None else live.replicas,
                            leader=None if live is None else live.leader,
                            idle_polls=track.idle_polls,
                            stall_intervals=self.config.stall_intervals,
                            elect_leaders=self.config.elect_leaders)
        if step.settling:
            self.tracking[move.name] = replace(track, idle_polls=track.idle_polls + 1)
        if step.reorder is not None:
            admin.alter_partition_reassignments({move.key: step.reorder})
        if step.ends is None:
            return False
        if step.elect:
            admin.elect_preferred_leaders([move.key])
        if self._restored_or_failed(move, self.restore_throttle(self._throttle_plan(move))):
            self.enter(move, step.ends, step.reason or self._record(move).reason)
        return False

    def _restored_or_failed(self, move: Move, problems: list[str],
                            reason: str | None = None) -> bool:
        """True when `problems` (of restoring the move's throttles) is empty; else the move
        fails with them and the way to clear what is left."""
        if not problems:
            return True
        why = self._record(move).reason if reason is None else reason
        self.enter(move, S.FAILED, f"{why}; " + "; ".join(problems)
                   + "; run `rebalance clear-throttles` once the brokers are reachable")
        return False
