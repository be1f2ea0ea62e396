"""The run loop: preflight, then moves (at most `concurrency` at once, each broker sending for
at most one and receiving for at most one: executor.flows; which start when:
executor.starts), each driven through its states, polling the cluster every `poll_seconds`.

Entry points: `Executor.start` (new run), `Executor.resume` (reconcile a journal with the
cluster and continue), `Executor.cancel` (revert what is in flight, restore throttles) and
`clear_throttles` (restore the throttles a journal says may be left).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from executor.config import (
    DEFAULT_QUOTA_WINDOW_SECONDS,
    Event,
    EventKind,
    ExecutorConfig,
    Ports,
    Reporter,
    ignore_events,
)
from executor.decide import on_cancel, run_outcome
from executor.dirs import DIR_RATE, DirStage
from executor.flows import choose_quota_window
from executor.guard import SloGuard
from executor.journal import (
    RETRYABLE,
    Journal,
    JournalSink,
    RunState,
    apply_record,
    header_record,
    replay,
    retry_record,
)
from executor.plan import ExecutionPlan
from executor.preflight import (
    ClusterView,
    PlanCheck,
    PlanValidator,
    exposed_moves,
    mismatch,
    offline_replicas,
    onto_cordoned,
    preflight_problems,
    read_existing_throttles,
    read_follower_lists,
    require_preflight,
    warm_follower_quotas,
)
from executor.records import Record, RunOutcome
from executor.starts import MoveStarter
from executor.state import MoveState
from executor.status import throttles_left
from executor.steps import MoveDriver
from executor.throttle import ThrottlePlan, capped_throttle, plan_throttle
from executor.tickreads import TickReads
from kafka_rebalance.core.errors import ClusterError, ExecutionError, LeaseLost
from kafka_rebalance.core.ports import CORDONED_LOG_DIRS
from planner.result import Move

S = MoveState


@dataclass(frozen=True)
class RunReport:
    """How a run ended: the outcome, each move's final state and why, and what is left."""

    outcome: RunOutcome
    states: dict[str, MoveState]
    reasons: dict[str, str]
    throttles_left: tuple[str, ...]
    stop_reason: str = ""  # why no more moves were started (gate timeout, window end)

    @property
    def done(self) -> int:
        return sum(1 for s in self.states.values() if s is S.DONE)

    @property
    def cancelled_cleanly(self) -> bool:
        """Cancelled as asked (`rebalance cancel`, Ctrl-C in auto, SIGTERM), no move failed and
        no throttle left: not an error, though not a completed run either."""
        return (self.outcome is RunOutcome.CANCELLED and not self.throttles_left
                and S.FAILED not in self.states.values())


class Executor:
    """Runs one journaled plan against the ports."""

    def __init__(self, ports: Ports, config: ExecutorConfig, journal: Journal,
                 reporter: Reporter = ignore_events) -> None:
        self.reads = TickReads(ports.admin)
        ports = replace(ports, admin=self.reads)
        self.ports = ports
        self.config = config
        self.journal = journal
        self.report = reporter
        self.driver = MoveDriver(ports, config, journal, reporter)
        self.cancelling = False
        self.cluster_errors = 0
        self.starter = MoveStarter(ports, config, journal, self.driver, reporter)
        # why the cluster's run lease passed to another process ("": this one holds it); the
        # use case that holds the lease sets it, and the loop stops the moment it says so
        self.lease_lost: Callable[[], str] = lambda: ""
        self.guard = SloGuard(ports, config, journal, self.driver, reporter)
        # moves that had already failed or been cancelled when this process took over
        self._ended_badly_before = frozenset(
            m.name for m in journal.run.plan.moves
            if journal.run.state_of(m.name) in (S.FAILED, S.CANCELLED))

    @property
    def run_state(self) -> RunState:
        return self.journal.run

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def start(cls, plan: ExecutionPlan, ports: Ports, config: ExecutorConfig,
              open_sink: Callable[[Record], JournalSink], *,
              validator: PlanValidator | None = None,
              reporter: Reporter = ignore_events, run_id: str = "") -> Executor:
        """Preflight `plan` (nothing changes if it fails), then create its journal."""
        view = ClusterView.read(ports.admin)
        require_preflight(mismatch(plan.moves, view))  # before reading their topics
        config, window = _with_quota_window(ports, config, view, plan.moves)
        check = validator(plan) if validator is not None else PlanCheck()
        refused, burst = _receiver_checks(ports, config, view, plan.moves)
        require_preflight(preflight_problems(
            plan, view, allow_under_replicated=config.allow_under_replicated,
            validation=check.errors) + refused)
        warnings = [*window, *burst, *check.warnings, *offline_replicas(view, plan.moves),
                    *read_existing_throttles(ports.admin, plan, config.max_bytes_per_sec,
                                             view.live_broker_ids)]
        header = header_record(plan, config.to_journal(), run_id)
        executor = cls(ports, config, Journal(replay([header]), open_sink(header)), reporter)
        executor.starter.exposed = exposed_moves(view, plan.moves)
        executor._cordon(config.cordon_brokers & view.live_broker_ids)
        for warning in warnings:
            executor._note(warning)
        return executor

    @classmethod
    def resume(cls, records: Sequence[Record], sink: JournalSink, ports: Ports,
               config: ExecutorConfig, reporter: Reporter = ignore_events, *,
               retry_failed: bool = False) -> Executor:
        """Reconcile the journal with the cluster and get ready to continue the run; with
        `retry_failed`, failed and cancelled moves start again like fresh ones (journaled only
        once preflight passed)."""
        run = replay(records)
        if retry_failed:
            _restore_left_by_failures(run, sink, ports, config)
        retries = _retries(run, ports.clock.now()) if retry_failed else []
        for record in retries:
            apply_record(run, record)
        if not run.unfinished and not (run.dirs_left and run.outcome is not RunOutcome.CANCELLED):
            again = run.in_state(RETRYABLE)
            hint = (f"; {len(again)} failed or cancelled move(s) can start again with "
                    "--retry-failed" if again else "")
            raise ExecutionError(f"nothing to resume: the run ended ({run.outcome or 'done'}"
                                 f"{': ' + run.end_reason if run.end_reason else ''}){hint}")
        own = frozenset(m.key for m in run.unfinished if run.state_of(m.name) is not S.PENDING)
        view = ClusterView.read(ports.admin)
        pending = run.in_state(frozenset({S.PENDING}))
        require_preflight(mismatch(pending, view))  # before reading their topics
        config, window = _with_quota_window(ports, config, view, run.unfinished)
        refused, burst = _receiver_checks(ports, config, view, pending, _own_entries(run))
        require_preflight(preflight_problems(
            ExecutionPlan(tuple(run.unfinished)), view,
            allow_under_replicated=config.allow_under_replicated, own_in_flight=own,
            pending=pending, done=run.in_state(frozenset({S.DONE}))) + refused)
        for record in retries:
            sink.append(record)
        executor = cls(ports, config, Journal(run, sink), reporter)
        cap = config.max_bytes_per_sec
        in_force = run.cap_at()
        if run.outcome is not None or cap != in_force:
            executor.journal.reopen(ports.clock.now(), None if cap == in_force else cap)
        executor.starter.exposed = exposed_moves(view, pending)
        for warning in window + burst + offline_replicas(view, pending):
            executor._note(warning)
        executor.reconcile_throttles()
        if run.cancelled:  # a cancel that did not end: finish it, start nothing
            executor._note("the run was being cancelled: finishing the cancel")
            executor.cancel()
        return executor

    @classmethod
    def for_cancel(cls, records: Sequence[Record], sink: JournalSink, ports: Ports,
                   config: ExecutorConfig, reporter: Reporter = ignore_events) -> Executor:
        """An executor over a journal, without preflight, ready to `cancel()`."""
        run = replay(records)
        if not run.unfinished and not run.dirs_left:
            left = throttles_left(run)
            hint = (f"; throttles of {', '.join(left)} may be left: `rebalance clear-throttles`"
                    if left else "")
            raise ExecutionError(f"nothing to cancel: the run ended ({run.outcome or 'done'})"
                                 + hint)
        executor = cls(ports, config, Journal(run, sink), reporter)
        if run.outcome is not None:  # a stopped run: the cancel's end is a new end
            executor.journal.reopen(ports.clock.now())
        return executor

    def reconcile_throttles(self) -> None:
        """Re-set the throttles of moves whose data is in flight (they may have been cleared),
        no rate above this process's cap (a resume with a lower --max-mbps holds from its
        first second), and restore those that failed moves left behind (their brokers may be
        back)."""
        now = self.ports.clock.now
        failed = self.run_state.in_state(frozenset({S.FAILED}))
        for name, problems in _restore_left(self.journal, self.driver, failed).items():
            self._note(f"throttles of failed move {name} still left: " + "; ".join(problems))
        for move in self.run_state.in_state(frozenset({S.THROTTLING, S.SUBMITTED, S.COPYING})):
            plan = self.run_state.moves[move.name].throttle
            if plan is None or plan.empty:
                continue
            capped = capped_throttle(plan, self.config.max_bytes_per_sec)
            if capped != plan:
                self.journal.update_throttle(move.name, capped, now())
                plan = capped
            if self.run_state.state_of(move.name) is S.THROTTLING:
                continue  # its step sets the throttle as journaled
            self.journal.throttles(move.name, True, now())
            problems = self.driver.apply_throttle(plan)
            if problems:
                self.driver.enter(move, S.CANCELLING,
                                  "throttle read back differs: " + "; ".join(problems))

    # ---- the loop --------------------------------------------------------------------------
    def run(self) -> RunReport:
        """Tick until every move that may run has ended; journal and return the outcome."""
        while True:
            lost = self.lease_lost()
            if lost:
                raise LeaseLost(lost + "; the journal keeps what this process did")
            if not self.cancelling and self.journal.cancel_requested():
                self.cancel()
            if self.tick():
                self._log_dirs()
                return self.finish()
            self.ports.clock.sleep(self.config.poll_seconds)

    def _log_dirs(self) -> None:
        """Once every partition move is done, the plan's moves between log dirs (JBOD); a
        cancelled run keeps replicas in the dir they are in. Both restore the log-dir throttle,
        as does a stopped run that a killed one left it to."""
        run = self.run_state
        if run.plan.log_dirs is None and not run.dir_throttles:
            return
        stage = DirStage(self.ports, self.config, self.journal, self._note)
        if not self.cancelling and all(run.state_of(m.name) is S.DONE for m in run.plan.moves):
            if stage.run():
                return
            self.cancel()
        if self.cancelling:
            stage.cancel()
        else:
            stage.restore()

    def tick(self) -> bool:
        """Advance every move in flight, start what may start; True when the run is over.

        A cluster error (timeout, broker briefly unreachable) is retried on the next tick, as
        every step is idempotent; `stall_intervals` errors in a row stop the run (resumable).
        """
        active = self._active()
        self.reads.new_tick(topics={m.topic for m in active},
                            receivers={b for m in active for b in m.added_brokers})
        try:
            return self._advance_all()
        finally:
            self.reads.end_tick()

    def _advance_all(self) -> bool:
        try:
            self.starter.watch_quotas()  # copies in flight until now, before they end
            for move in self._active():
                self.driver.advance(move)
            self.driver.elect_waiting()  # leadership-only moves elect together
            if not self.cancelling:
                self.guard.tick(self._active())
            blocked = self._failed_brokers()
            if not self.cancelling and not self._stopped() and not self.lease_lost():
                self.starter.blocked = blocked
                self.starter.start_moves(self._active())
        except ClusterError as exc:
            self.cluster_errors += 1
            if self.cluster_errors >= self.config.stall_intervals:
                raise ClusterError(f"{exc} ({self.cluster_errors} polls in a row); the journal "
                                   "keeps the run: `rebalance resume` or `rebalance cancel` "
                                   "once the cluster answers") from exc
            self._note(f"cluster error, retrying next poll: {exc}")
            return False
        self.cluster_errors = 0
        if self._active():
            return False
        return self.cancelling or self._stopped() or not self._startable(blocked)

    def _active(self) -> list[Move]:
        return [m for m in self.run_state.unfinished if self.run_state.state_of(m.name)
                is not S.PENDING]

    def _pending(self) -> list[Move]:
        return self.run_state.in_state(frozenset({S.PENDING}))

    def _stopped(self) -> bool:
        """True when a step decided the run must start no more moves (a gate timed out, the
        window ends). A failed move stops only the moves that share its brokers."""
        return bool(self.driver.stop_reason)

    def _failed_brokers(self) -> frozenset[int]:
        """Brokers of the moves that failed or were cancelled in this session: a pending move
        through one of them waits for `resume --retry-failed`; the others go on."""
        return frozenset(b for m in self.run_state.plan.moves
                         if m.name not in self._ended_badly_before
                         and m.name not in self.driver.gone  # its topic, not its brokers
                         and self.run_state.state_of(m.name) in (S.FAILED, S.CANCELLED)
                         for b in (*m.current, *m.target))

    def _startable(self, blocked: frozenset[int]) -> list[Move]:
        """Pending moves that may still start in this session: none through a `blocked`
        broker (`_failed_brokers`)."""
        return [m for m in self._pending() if not blocked & {*m.current, *m.target}]

    def cancel(self) -> None:
        """Revert what is in flight and restore throttles; moves past copying finish. The
        cancel is journaled first: a process that takes the run over finishes it."""
        self.cancelling = True
        self.driver.skip_gate = True
        if not self.run_state.cancelled:
            self.journal.cancel(self.ports.clock.now())
            self._note("cancel requested: reverting moves in flight and restoring throttles")
        for move in self.run_state.unfinished:
            step = on_cancel(self.run_state.state_of(move.name))
            if step is not None:
                self.driver.enter(move, *step)

    def finish(self) -> RunReport:
        """Journal the outcome and summarise it."""
        run = self.run_state
        states = {m.name: run.state_of(m.name) for m in run.plan.moves}
        reasons = {n: run.moves[n].reason for n in states if run.moves[n].reason}
        outcome = run_outcome(self.cancelling, states.values())
        trouble = [f"{n}: {s.value} ({reasons.get(n, '')})" for n, s in states.items()
                   if s in (S.FAILED, S.CANCELLED)]
        if self.driver.stop_reason:
            trouble.append(self.driver.stop_reason)
        startable = {m.name for m in self._startable(self._failed_brokers())}
        held = [m.name for m in self._pending() if m.name not in startable]
        if held and not self.cancelling:
            trouble.append(f"{len(held)} move(s) not started, as they share brokers with a "
                           f"failed move ({', '.join(held[:5])}"
                           f"{' ...' if len(held) > 5 else ''}): `rebalance resume "
                           "--retry-failed` once those brokers are healthy")
        if run.cordons:
            self._cordons_at_end(outcome)
        self.journal.end(outcome, self.ports.clock.now(), "; ".join(trouble))
        if self.cancelling:
            self.journal.clear_cancel_request()
        left = throttles_left(run)
        self.report(Event(EventKind.END, f"run {outcome.value}: "
                          f"{sum(s is S.DONE for s in states.values())} of {len(states)} "
                          "moves done"))
        return RunReport(outcome, states, reasons, left, self.driver.stop_reason)

    def _note(self, message: str) -> None:
        self.report(Event(EventKind.NOTE, message))

    def _cordon(self, brokers: frozenset[int]) -> None:
        """Cordon the drained `brokers` before any move (journaled first, with the values it
        replaces): topics created during the drain stay off them."""
        if not brokers:
            return
        admin = self.ports.admin
        priors = {b: values.get(CORDONED_LOG_DIRS) for b, values in
                  admin.broker_configs(sorted(brokers), [CORDONED_LOG_DIRS]).items()}
        self.journal.cordon(priors, True, self.ports.clock.now())
        admin.alter_broker_configs({b: {CORDONED_LOG_DIRS: "*"} for b in sorted(brokers)})
        self._note(f"cordoned broker(s) {sorted(brokers)} for the drain (cordoned.log.dirs=*): "
                   "topics created meanwhile stay off them; a cancel restores their value")

    def _cordons_at_end(self, outcome: RunOutcome) -> None:
        """A cancelled run puts the drained brokers' cordoned.log.dirs back as they were; a
        completed drain leaves them cordoned (they are empty, about to be decommissioned)."""
        priors = self.run_state.cordons
        if outcome is RunOutcome.CANCELLED:
            problem = restore_cordons(self.run_state, self.journal, self.ports)
            self._note(problem or f"restored cordoned.log.dirs on broker(s) {sorted(priors)}")
        elif outcome is RunOutcome.COMPLETED:
            self._note(f"broker(s) {sorted(priors)} stay cordoned: drained; lift it with "
                       "kafka-configs --delete-config cordoned.log.dirs if they stay in service")


def restore_cordons(run: RunState, journal: Journal, ports: Ports) -> str:
    """Put the drained brokers' cordoned.log.dirs back as the run found them (journaled once
    done); why it could not be ('' when done). A broker offline now keeps the run's cordon
    until `clear-throttles` is run again once it is back."""
    priors = run.cordons
    try:
        ports.admin.alter_broker_configs(
            {b: {CORDONED_LOG_DIRS: value} for b, value in sorted(priors.items())})
    except ClusterError as exc:
        return (f"could not restore cordoned.log.dirs on broker(s) {sorted(priors)}: {exc}; "
                "`rebalance clear-throttles` puts it back once they answer")
    journal.cordon(priors, False, ports.clock.now())
    return ""


def _restore_left_by_failures(run: RunState, sink: JournalSink, ports: Ports,
                              config: ExecutorConfig) -> None:
    """Restore the throttles failed or cancelled moves left (a broker was down when their
    restore ran, and may be back now), so that they can start again from nothing; a restore
    that still fails leaves the move to `clear-throttles`."""
    again = run.in_state(RETRYABLE)
    if any(run.moves[m.name].throttles_left for m in again):
        journal = Journal(run, sink)
        _restore_left(journal, MoveDriver(ports, config, journal, ignore_events), again)


def _restore_left(journal: Journal, driver: MoveDriver, moves: Sequence[Move]
                  ) -> dict[str, list[str]]:
    """Restore the throttles `moves` may have left (journaled as gone once read back); what
    could not be restored, per move."""
    left: dict[str, list[str]] = {}
    for move in moves:
        record = journal.run.moves[move.name]
        if not record.throttles_left or record.throttle is None:
            continue
        problems = driver.restore_throttle(record.throttle)
        if problems:
            left[move.name] = problems
        else:
            journal.throttles(move.name, False, driver.ports.clock.now())
    return left


def _retries(run: RunState, now: float) -> list[Record]:
    """Retry records for every failed or cancelled move; refused while one may still have
    throttles on the cluster (clear-throttles restores them first)."""
    again = run.in_state(RETRYABLE)
    left = [m.name for m in again if run.moves[m.name].throttles_left]
    if left:
        raise ExecutionError(f"move(s) {', '.join(left)} may still have throttles on the "
                             "cluster: run `rebalance clear-throttles` once their brokers are "
                             "back, then resume --retry-failed; nothing was changed")
    return [retry_record(m.name, now) for m in again]


class _NoJournal:
    """A sink for previews: nothing is written, nothing is ever cancelled."""

    def append(self, record: Record) -> None:
        pass

    def cancel_requested(self) -> bool:
        return False

    def clear_cancel_request(self) -> None:
        pass


@dataclass(frozen=True)
class Preview:
    """What a run would do now: why preflight would refuse, throttle configs already set, and
    each move's throttle."""

    problems: list[str]
    warnings: list[str]
    throttles: list[ThrottlePlan]


def preview(plan: ExecutionPlan, ports: Ports, config: ExecutorConfig, *,
            validator: PlanValidator | None = None) -> Preview:
    """What a run would do (for --dry-run), reading the cluster only."""
    view = ClusterView.read(ports.admin)
    # a topic deleted since the plan has no configs to read: preflight says it is stale
    readable = [m for m in plan.moves if m.key in view.partitions]
    config, window = _with_quota_window(ports, config, view, readable)
    refused, burst = _receiver_checks(ports, config, view, readable)
    check = validator(plan) if validator is not None else PlanCheck()
    problems = preflight_problems(
        plan, view, allow_under_replicated=config.allow_under_replicated,
        validation=check.errors) + refused
    journal = Journal(replay([header_record(plan, config.to_journal())]), _NoJournal())
    driver = MoveDriver(ports, config, journal, ignore_events)
    throttles = [plan_throttle(m, driver.priors(m), driver.rates(m)) for m in readable]
    warnings = [*window, *burst, *check.warnings, *offline_replicas(view, plan.moves),
                *read_existing_throttles(ports.admin, plan, config.max_bytes_per_sec,
                                         view.live_broker_ids)]
    return Preview(problems, warnings, throttles)


def _with_quota_window(ports: Ports, config: ExecutorConfig, view: ClusterView,
                       moves: Sequence[Move]) -> tuple[ExecutorConfig, list[str]]:
    """`config` waiting on the quota window the live brokers of `moves` describe
    (choose_quota_window), and what to tell the operator of it. Brokers that cannot be asked
    leave it as asked (or Kafka's default)."""
    brokers = view.live_broker_ids & {b for m in moves for b in (*m.current, *m.target)}
    try:
        described = ports.admin.quota_windows(brokers) if brokers else {}
        unread = ""
    except ClusterError as exc:
        described, unread = {}, f"could not read the brokers' replication quota window ({exc})"
    choice = choose_quota_window(config.quota_window_seconds, described,
                                 DEFAULT_QUOTA_WINDOW_SECONDS)
    notes = [n for n in (unread and f"{unread}: waiting {choice.seconds:g} s", choice.note) if n]
    return replace(config, quota_window_seconds=choice.seconds), notes


def _receiver_checks(ports: Ports, config: ExecutorConfig, view: ClusterView,
                     moves: Sequence[Move],
                     own_entries: frozenset[tuple[str, str]] = frozenset()
                     ) -> tuple[list[str], list[str]]:
    """What the live cluster says of the brokers `moves` add replicas to: refusals (a
    cordoned receiver; a warm follower quota) and warnings (a warm quota the operator accepts
    with --allow-quota-burst)."""
    if not any(m.added_brokers for m in moves):
        return [], []
    cordoned = onto_cordoned(moves, ports.admin, view.live_broker_ids)
    found = warm_follower_quotas(view, moves, read_follower_lists(ports.admin, view, moves),
                                 own_entries)
    return (cordoned, found) if config.allow_quota_burst else (cordoned + found, [])


def _own_entries(run: RunState) -> frozenset[tuple[str, str]]:
    """The follower-list entries this run's journaled throttles add."""
    return frozenset((r.throttle.priors.topic, e) for r in run.moves.values()
                     if r.throttle is not None for e in r.throttle.follower_entries)


def clear_throttles(run: RunState, journal: Journal, driver: MoveDriver) -> list[str]:
    """Restore every throttle the journal says may be left; returns what could not be. A
    move whose reassignment is still copying keeps its throttle (without it the copy would
    run at full speed): resuming the run finishes it, cancelling reverts it, and either
    restores the throttle."""
    problems: list[str] = []
    copying = driver.ports.admin.list_partition_reassignments()
    left_on = [m for m in run.plan.moves
               if run.moves[m.name].throttles_left and run.moves[m.name].throttle is not None]
    in_flight = [m for m in left_on if m.key in copying]
    problems.extend(f"{m.name}: its reassignment is still copying, so its throttle stays (the "
                    "copy would run at full speed without it); `rebalance resume` finishes it "
                    "or `rebalance cancel` reverts it, and either restores the throttle"
                    for m in in_flight)
    for move in left_on:
        record = run.moves[move.name]
        if move in in_flight or record.throttle is None:
            continue
        # rates a copy in flight shares stay with it; with none in flight, all go together
        left = driver.restore_throttle(record.throttle, all_moves=not in_flight)
        if left:
            problems.extend(f"{move.name}: {p}" for p in left)
        else:
            journal.throttles(move.name, False, driver.ports.clock.now())
    if run.dir_throttles:
        problems.extend(_clear_dir_throttle(run, journal, driver))
    if run.cordons and run.outcome is RunOutcome.CANCELLED:  # (a drain done keeps its cordon)
        problem = restore_cordons(run, journal, driver.ports)
        problems.extend([problem] if problem else [])
    return problems


def _clear_dir_throttle(run: RunState, journal: Journal, driver: MoveDriver) -> list[str]:
    """Restore the log-dir throttle the run set, unless a replica still moves between dirs
    under it (without it that copy would run at full speed)."""
    moves = run.plan.log_dirs.moves if run.plan.log_dirs is not None else ()
    left = [m for m in moves if m.replica not in run.dirs_ended]
    seen = driver.ports.admin.log_dirs(sorted({m.broker for m in left})) if left else {}
    moving = [m for m in left if m.broker in seen and m.key in seen[m.broker].futures]
    if moving:
        return [f"{len(moving)} replica(s) still move between log dirs (e.g. "
                f"{moving[0].replica}), so {DIR_RATE} stays on their brokers; `rebalance "
                "resume` finishes them or `rebalance cancel` keeps them where they are, and "
                "either restores it"]
    DirStage(driver.ports, driver.config, journal, lambda _: None).restore()
    return []


def clear_throttles_from(records: Sequence[Record], sink: JournalSink, ports: Ports,
                         config: ExecutorConfig) -> list[str]:
    """`clear_throttles` over a journal's records."""
    journal = Journal(replay(records), sink)
    return clear_throttles(journal.run, journal, MoveDriver(ports, config, journal,
                                                            ignore_events))
