"""One auto-balancing cycle at the edge: read the cluster, decide, plan, execute or resume.

The outside world comes in as arguments (the executor's ports, a topology reader, a planner, the
state directory, a line printer), so this module holds the sequence and nothing of Kafka.
Guarantees: no move starts outside a window (a new or resumed run gets finish_by = the window's
end); a stale unfinished run is cancelled before a fresh plan; a new plan is executed only when it
is worth its bytes (kafka_rebalance.autobalance.worth); a resumed run keeps its own settings except
this process's cap, as `rebalance resume --max-mbps` does (ExecutorConfig.from_journal,
kafka_rebalance.autobalance.resume_flags); and whatever a run leaves in throttles is restored before
the cycle returns (an interrupted run is cancelled, not left).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from executor.config import ExecutorConfig, Ports, Reporter, RunOverrides
from executor.drive import drive_run
from executor.journal import (
    JournalFile,
    header_settings,
    journal_of,
    leaves_work,
    new_run_id,
    replay,
    run_id_of,
)
from executor.lease import LeaseHold
from executor.plan import ExecutionPlan
from executor.preflight import ClusterView, done_not_in_place, planner_validator, stale_moves
from executor.records import Record, RunOutcome
from executor.runner import Executor, RunReport
from executor.state import MoveState
from kafka_rebalance.autobalance.cycle import Action, Decision, Pace, RunLeft, decide_cycle
from kafka_rebalance.autobalance.healing import DEFAULT_GRACE_SECONDS, healing, offline_since
from kafka_rebalance.autobalance.imbalance import Verdict, imbalance_verdict
from kafka_rebalance.autobalance.resume_flags import resume_line
from kafka_rebalance.autobalance.statedir import StateDir, run_left_of
from kafka_rebalance.autobalance.windows import Schedule
from kafka_rebalance.autobalance.worth import DEFAULT_MIN_IMPROVEMENT, judge_plan
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.files.planfile import write_plan
from planner.goals import Budget, Goals
from planner.planfile import PlanFile
from planner.validate import validate_plan
from topology.model import Topology
from topology.units import size_text

Planner = Callable[[Topology, Goals, Budget], PlanFile]
"""Solve, validate and order within the cycle's goals and byte budget (`rebalance auto` gives
`kafka_rebalance.usecases.auto.plan_for_cycle`; tests a stub)."""


@dataclass(frozen=True)
class AutoSettings:
    """What every cycle of one `rebalance auto` process uses."""

    schedule: Schedule
    pace: Pace
    goals: Goals
    executor: ExecutorConfig  # a new run's; finish_by is set per cycle
    planner_seconds: float = 60.0
    dry_run: bool = False
    min_improvement: float = DEFAULT_MIN_IMPROVEMENT
    # a broker offline this long is drained (self-healing); shorter, it may be restarting
    dead_broker_grace_seconds: float = DEFAULT_GRACE_SECONDS

    def __post_init__(self) -> None:
        if not 0 <= self.min_improvement < 1:
            raise InputError(f"--min-improvement must be in [0, 1), got {self.min_improvement}")
        if not self.dead_broker_grace_seconds >= 0:
            raise InputError("--drain-dead-after must be 0 or more seconds, got "
                             f"{self.dead_broker_grace_seconds}")

    def resume_overrides(self, finish_by: float) -> RunOverrides:
        """What this process gives a run it resumes (ExecutorConfig.from_journal has the
        rest from the journal): its cap, as `rebalance resume --max-mbps` does, its poll
        interval and permissions, the window's end; never adaptive rates (auto has none)."""
        return RunOverrides(max_bytes_per_sec=self.executor.max_bytes_per_sec, adaptive=False,
                            allow_under_replicated=self.executor.allow_under_replicated,
                            allow_quota_burst=self.executor.allow_quota_burst,
                            finish_by=finish_by, poll_seconds=self.executor.poll_seconds)


LeaseFactory = Callable[[str, Path], AbstractContextManager[LeaseHold]]
"""Holds the cluster's run lease for (run id, journal) while its block runs."""


@contextmanager
def no_lease(run_id: str, journal: Path) -> Iterator[LeaseHold]:
    """No lease at all (tests of the cycle's logic, without a cluster)."""
    yield LeaseHold()


@dataclass(frozen=True)
class Edge:
    """The outside world of a cycle."""

    ports: Ports
    read_topology: Callable[[], Topology]
    planner: Planner
    state: StateDir
    say: Callable[[str], None]
    reporter: Reporter
    lease: LeaseFactory = no_lease  # the cluster's run lease (one run per cluster)


@dataclass(frozen=True)
class CycleResult:
    """What a cycle decided and did."""

    decision: Decision
    plan_path: Path | None = None
    journal_path: Path | None = None
    report: RunReport | None = None
    skipped: str = ""  # why a plan was made but not executed

    @property
    def failed(self) -> bool:
        """A run that ended with failed or cancelled moves (a stop at the window's end or a
        gate timeout is not a failure: the next cycle resumes it)."""
        if self.report is None:
            return False
        bad = (MoveState.FAILED, MoveState.CANCELLED)
        return (self.report.outcome is RunOutcome.CANCELLED
                or any(s in bad for s in self.report.states.values())
                or bool(self.report.throttles_left))

    @property
    def cancelled_cleanly(self) -> bool:
        """The run was cancelled as asked, no move failed and no throttle is left."""
        return self.report is not None and self.report.cancelled_cleanly


def run_cycle(settings: AutoSettings, edge: Edge) -> CycleResult:
    """Decide and act once; returns what happened (RebalanceErrors propagate)."""
    now = datetime.fromtimestamp(edge.ports.clock.now(), UTC)
    journal, run = edge.state.latest_run()
    cached: list[Topology] = []

    def topology() -> Topology:
        if not cached:
            cached.append(edge.read_topology())
        return cached[0]

    def verdict() -> Verdict:
        seen, before = topology(), edge.state.offline_seen()
        since = offline_since(seen, before, now.timestamp())
        if since != before and not settings.dry_run:
            edge.state.remember_offline(since)
        heal = healing(seen, since, now.timestamp(), settings.dead_broker_grace_seconds)
        if heal.lost:
            raise ExecutionError(heal.lost)
        if heal.waiting:
            return Verdict(False, (), waiting=heal.waiting)
        return imbalance_verdict(seen, settings.goals)

    decision = decide_cycle(now, settings.schedule, run_left_of(run), verdict, settings.pace)
    edge.say(f"{decision.action.value}: {decision.reason}")
    if decision.action in (Action.RESUME, Action.FINISH_IN_FLIGHT):
        assert journal is not None and decision.finish_by is not None
        result = _resume(settings, edge, decision, journal)
        if result is not None or decision.action is Action.FINISH_IN_FLIGHT:
            return result or CycleResult(decision, journal_path=journal)
        # the stale run was cancelled: decide again as if there were none
        decision = decide_cycle(now, settings.schedule, RunLeft.NONE, verdict, settings.pace)
        edge.say(f"{decision.action.value}: {decision.reason}")
    if decision.action is Action.REBALANCE:
        return _rebalance(settings, edge, decision, topology())
    return CycleResult(decision)


def _resume(settings: AutoSettings, edge: Edge, decision: Decision,
            journal: Path) -> CycleResult | None:
    """Continue the unfinished run until finish_by; None when it was stale and got cancelled."""
    assert decision.finish_by is not None
    if settings.dry_run:
        edge.say(f"dry run: would resume {journal} until {decision.finish_by:%H:%M:%S %Z}")
        return CycleResult(decision, journal_path=journal)
    sink, records = JournalFile.open(journal)
    try:
        started = header_settings(records)
        config = ExecutorConfig.from_journal(
            started, overrides=settings.resume_overrides(decision.finish_by.timestamp()))
        with edge.lease(run_id_of(records, journal), journal) as hold:
            hold.started = hold.inherited and leaves_work(records)  # a refusal gives it back
            stale = _stale(records, edge.ports)
            if stale:
                edge.say(f"the cluster changed since {journal.name} was planned ({stale}); "
                         "cancelling that run and planning afresh")
                executor = Executor.for_cancel(records, sink, edge.ports, config,
                                               edge.reporter)
                executor.cancel()
                _drive(executor, edge, hold)
                return None
            executor = Executor.resume(records, sink, edge.ports, config, edge.reporter)
            hold.started = True
            edge.say(resume_line(journal.name, started, config.to_journal()))
            report = _drive(executor, edge, hold)
    finally:
        sink.close()
    return CycleResult(decision, journal.with_suffix(""), journal, report)


def _stale(records: list[Record], ports: Ports) -> str:
    """Why the run no longer applies to the cluster ('' when it does): pending moves whose
    replicas changed, or moves marked done that are not in place."""
    run = replay(records)
    view = ClusterView.read(ports.admin)
    pending = run.in_state(frozenset({MoveState.PENDING}))
    done = run.in_state(frozenset({MoveState.DONE}))
    return "; ".join((stale_moves(pending, view) + done_not_in_place(done, view))[:5])


def _rebalance(settings: AutoSettings, edge: Edge, decision: Decision,
               topology: Topology) -> CycleResult:
    """Plan within the window's byte budget, write the plan, execute it until finish_by. The
    cluster's run lease is taken before planning (not for a dry run): a cluster another run
    holds gets no plan made against its moves in flight, and no plan file left behind."""
    assert decision.finish_by is not None and decision.max_bytes is not None
    if settings.dry_run:
        return _plan_and_run(settings, edge, decision, topology, None)
    edge.state.ensure()
    plan_path = edge.state.new_plan_path(datetime.fromtimestamp(edge.ports.clock.now(), UTC))
    run_id = new_run_id()
    with edge.lease(run_id, journal_of(plan_path)) as hold:
        return _plan_and_run(settings, edge, decision, topology, (plan_path, run_id, hold))


def _plan_and_run(settings: AutoSettings, edge: Edge, decision: Decision, topology: Topology,
                  run: tuple[Path, str, LeaseHold] | None) -> CycleResult:
    """`_rebalance` under the lease (`run`: the plan's path, the run id and the lease hold;
    None for a dry run, which plans only)."""
    assert decision.finish_by is not None and decision.max_bytes is not None
    budget = Budget(max_bytes=decision.max_bytes, time_limit_s=settings.planner_seconds)
    edge.say(f"planning {len(topology.partitions)} partitions on {len(topology.brokers)} "
             f"brokers, at most {size_text(decision.max_bytes)} moved")
    plan_file = edge.planner(topology, settings.goals, budget)
    total = sum(m.bytes_moved for m in plan_file.moves)
    edge.say(f"plan: {len(plan_file.moves)} move(s), {size_text(total)} "
             f"({plan_file.solver.status.value})")
    dir_moves = plan_file.log_dirs.moves if plan_file.log_dirs is not None else ()
    if dir_moves:
        edge.say(f"and {len(dir_moves)} move(s) between log dirs of JBOD brokers")
    if not plan_file.moves and not dir_moves:
        edge.say("nothing the planner can improve within the budget: no run")
        return CycleResult(decision)
    assert decision.verdict is not None
    worth = judge_plan(plan_file, decision.verdict.hard_violations,
                       len(validate_plan(topology, plan_file.moves, plan_file.goals).errors),
                       settings.min_improvement)
    if not worth.worth:
        edge.say(f"nothing worth doing: {worth.reason}; no run")
        return CycleResult(decision, skipped=worth.reason)
    edge.say(f"worth running: {worth.reason}")
    if run is None:
        edge.say(f"dry run: would execute them until {decision.finish_by:%H:%M:%S %Z}; "
                 "nothing changed")
        return CycleResult(decision)
    plan_path, run_id, hold = run
    write_plan(plan_path, plan_file)
    journal = journal_of(plan_path)
    edge.say(f"wrote {plan_path}; executing (journal {journal.name})")
    config = replace(settings.executor, finish_by=decision.finish_by.timestamp())
    sinks: list[JournalFile] = []

    def open_sink(header: Record) -> JournalFile:
        sinks.append(JournalFile.create(journal, header))
        return sinks[0]

    try:
        planned = ExecutionPlan.of(plan_file.moves, plan_file.fingerprint, plan_file.log_dirs)
        executor = Executor.start(
            planned, edge.ports, config, open_sink, reporter=edge.reporter,
            validator=planner_validator(topology, settings.goals, strict_balance=True),
            run_id=run_id)
        report = _drive(executor, edge, hold)
    finally:
        for sink in sinks:
            sink.close()
    return CycleResult(decision, plan_path, journal, report)


def _drive(executor: Executor, edge: Edge, hold: LeaseHold) -> RunReport:
    """Run to the end (executor.drive): unattended, an interrupt cancels the run (reverts the
    move in flight, restores its throttles) rather than leaving it, and throttles still left
    are restored once more; those that cannot be are an error."""
    driven = drive_run(executor, hold, cancel_on_interrupt=edge.say, restore_left=True)
    if driven.unrestored:
        raise ExecutionError("throttles could not all be restored: "
                             + "; ".join(driven.unrestored)
                             + "; run `rebalance clear-throttles --journal ...`")
    return driven.report
