"""Start, resume or cancel a run, and restore the throttles a run left: the run use cases.

Each takes typed, keyword-only settings and the cluster to reach (`ClusterAccess`), tells what
happens through `RunHooks` (notes, the reporter of the run's events, a new run under way, and
a context around the run loop where the CLI shows progress and handles Ctrl-C) and returns
what came of it. Which settings a continued run uses is `ExecutorConfig.from_journal`; the
journal is the run. Nothing here prints.

The executor core (and the plan file's numpy) is imported inside the use cases, so that
`rebalance` starts fast for every other command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from executor.config import ExecutorConfig, Ports, Reporter, RunOverrides
from executor.journal import journal_of
from kafka_rebalance.core.errors import ExecutionError, InputError, MetricsError, RebalanceError
from kafka_rebalance.core.names import visible
from kafka_rebalance.usecases.cluster import (
    ClusterAccess,
    cluster_lease,
    live_topology,
    real_ports,
    with_scrape_window,
)

if TYPE_CHECKING:
    from executor.journal import JournalFile, RunState
    from executor.lease import LeaseHold
    from executor.plan import ExecutionPlan
    from executor.preflight import PlanValidator
    from executor.records import Record
    from executor.runner import Executor, Preview, RunReport
    from kafka_rebalance.core.ports import Clock
    from planner.planfile import PlanFile
    from topology.capacities import Capacities
    from topology.model import Capacity

Notify = Callable[[str], None]
"""Tells the operator something beside the run (a note on stderr, in the CLI)."""


class RunHooks(Protocol):
    """How a run use case shows what happens; the CLI renders, tests record."""

    def note(self, message: str) -> None:
        """Something worth knowing beside the run (the cluster changed since the plan, a lease
        that could not be released)."""

    def rate_window(self, window: str) -> None:
        """The gates' rate window, derived from the Prometheus targets' scrape interval."""

    def watch(self, run: RunState, cap: int, clock: Callable[[], float],
              records: list[Record] | None) -> Reporter:
        """The reporter of the run about to be driven: `run` as the journal has it (moves
        done so far), `records` the journal so far (its header alone for a new run), `clock` the
        executor's, which the journal's times are in."""

    def started(self, journal: Path, run_id: str) -> None:
        """A new run passed preflight and writes its journal."""

    def running(self, executor: Executor, journal: Path) -> AbstractContextManager[None]:
        """Around the run loop: what an interrupt or an error that stops it leaves to say."""


@dataclass(frozen=True, kw_only=True)
class StartSettings:
    """A new run: the plan file, its journal (which must not exist yet) and the executor's
    settings; `derive_rate_window` takes the gates' rate window from the Prometheus targets'
    scrape interval; `strict_balance` refuses a plan that now leaves some resource further
    from balance than the cluster is (otherwise that drift is told); `take_over_lease` names a
    killed run whose lease to take."""

    plan: Path
    journal: Path
    config: ExecutorConfig
    derive_rate_window: bool = False
    strict_balance: bool = False
    take_over_lease: str | None = None
    cordon_drained: bool = False  # cordon the brokers the plan drains before the first move


@dataclass(frozen=True, kw_only=True)
class ResumeSettings:
    """Continue the run of `journal` with its own settings except `overrides`
    (ExecutorConfig.from_journal); `retry_failed` starts its failed and cancelled moves again
    like fresh ones."""

    journal: Path
    overrides: RunOverrides = field(default_factory=RunOverrides)
    retry_failed: bool = False
    take_over_lease: str | None = None


@dataclass(frozen=True, kw_only=True)
class JournalSettings:
    """Cancel the run of `journal`, or restore the throttles it left."""

    journal: Path
    poll_seconds: float = 1.0
    take_over_lease: str | None = None


@dataclass(frozen=True)
class RunResult:
    """How a run the use case drove ended: the report, its journal (which keeps its cap) and
    the executor's clock, which the journal's times are in."""

    report: RunReport
    journal: Path
    clock: Clock
    # what the operator must know after the summary (a drained broker that still holds data)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunPreview:
    """What a new run would do now (a dry run): the preview of its `moves` moves."""

    preview: Preview
    moves: int


@dataclass(frozen=True)
class CancelAsked:
    """The run is held by an executor running on its journal, which was asked to cancel."""

    journal: Path


@dataclass(frozen=True)
class ThrottlesCleared:
    """What `clear-throttles` could not restore (nothing: all restored), of how many moves."""

    problems: list[str]
    moves_checked: int


def check_new_journal(path: Path, plan: Path | None = None,
                      planned: ExecutionPlan | None = None) -> None:
    """A new run's journal must not exist yet and its directory must (checked before the
    cluster is contacted; creating it later refuses the same way). A path that is a
    directory, the plan itself or any other file is refused as a wrong path, not taken for
    an earlier run's journal."""
    shown = visible(str(path))
    if path.is_dir():
        raise InputError(f"--journal {shown} is a directory; give the journal file's path "
                         f"(e.g. {visible(str(path / 'plan.json.journal'))})")
    if plan is not None and path.exists() and path.resolve() == plan.resolve():
        raise InputError(f"--journal {shown} is the plan file itself; the journal is a file "
                         f"of its own (default: {visible(str(journal_of(plan)))})")
    if path.exists() and not path.is_file():
        raise InputError(f"--journal {shown} is not a regular file (a device or a pipe); "
                         "give the path of a new journal file")
    if path.exists():
        if not _looks_like_journal(path):
            raise InputError(f"--journal {shown} exists and is not a run journal; it is never "
                             "overwritten: choose another --journal path")
        other = planned is not None and _of_another_plan(path, planned)
        ended = _ended(path)
        if other:
            raise ExecutionError(f"journal {shown} holds a run of another plan"
                                 + (f" that ended ({ended})" if ended else "")
                                 + "; it is never overwritten: give this run another "
                                 "--journal path")
        if ended:
            raise ExecutionError(f"journal {shown} holds a run of this plan that ended "
                                 f"({ended}); it is kept as that run's record: to run the plan "
                                 "again, give another --journal path (or move that journal "
                                 "away)")
        raise ExecutionError(f"journal {shown} already exists: resume or cancel that run, "
                             "or choose another --journal path")
    if not path.parent.is_dir():
        raise InputError(f"--journal {shown}: the directory {visible(str(path.parent))} does "
                         "not exist")
    problem = _cannot_create_in(path.parent)
    if problem:
        raise InputError(f"--journal {shown}: cannot create a file in "
                         f"{visible(str(path.parent))} ({problem}); give a writable path")


def _cannot_create_in(directory: Path) -> str:
    """Why no file can be created in `directory` ('' when one can): tried, not judged from
    permission bits, which neither a read-only mount nor root follows."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".rebalance-probe-"):
            return ""
    except OSError as exc:
        return exc.strerror or str(exc)


def _of_another_plan(path: Path, planned: ExecutionPlan) -> bool:
    """True when the journal's header keeps another plan id than `planned`'s ('' headers and
    unreadable journals count as not another: the other messages name them)."""
    from executor.journal import read_records

    try:
        records = read_records(path)
    except RebalanceError:
        return False
    plan_id = records[0].get("plan_id") if records else None
    return isinstance(plan_id, str) and plan_id != planned.plan_id


def _ended(path: Path) -> str:
    """How the journal's run ended ('' while it has not, or when it cannot be read)."""
    from executor.journal import read_journal

    try:
        outcome = read_journal(path).outcome
    except RebalanceError:
        return ""
    return "" if outcome is None else outcome.value


def _looks_like_journal(path: Path) -> bool:
    """True when the file starts with a run header record (whole or cut): a journal, maybe
    damaged. An empty file counts, since a run that died at once can leave one."""
    try:
        with path.open("rb") as handle:
            start = handle.read(4096)
    except OSError:
        return True  # unreadable: let the resume path name what is wrong
    if not start.strip():
        return True
    return start.lstrip().startswith(b"{") and b'"kind"' in start[:200] and b'"run"' in start


@dataclass(frozen=True)
class _Ready:
    """A new run's plan checked against the live cluster, before anything changes."""

    plan: ExecutionPlan
    ports: Ports
    config: ExecutorConfig
    validator: PlanValidator


def _read_plan(settings: StartSettings) -> tuple[PlanFile, ExecutionPlan]:
    """The plan file and its moves, checked against the flags (no cluster contacted)."""
    from executor.plan import ExecutionPlan
    from kafka_rebalance.files.planfile import read_plan

    plan_file = read_plan(settings.plan)
    if settings.cordon_drained and not plan_file.goals.remove_brokers:
        raise InputError(f"--cordon-drained: {settings.plan} drains no broker (it was not made "
                         "with --remove-broker); leave the flag out")
    return plan_file, ExecutionPlan.of(plan_file.moves, plan_file.fingerprint, plan_file.log_dirs)


@contextmanager
def _ready(settings: StartSettings, cluster: ClusterAccess, hooks: RunHooks,
           plan_file: PlanFile, plan: ExecutionPlan) -> Iterator[_Ready]:
    """Open the ports, read the live cluster and make the validator."""
    from executor.preflight import planner_validator

    drained = plan_file.goals.remove_brokers
    with real_ports(cluster.bootstrap, cluster.prometheus, cluster.command_config) as ports:
        topology = live_topology(ports, cluster.bootstrap, cluster.capacities,
                                 capacities_of_plan(plan_file))
        config = replace(settings.config,
                         capacities={b.id: b.capacity for b in topology.brokers},
                         cordon_brokers=drained if settings.cordon_drained else frozenset())
        if settings.derive_rate_window:
            config = replace(config, queries=with_scrape_window(config.queries,
                                                                cluster.prometheus))
            hooks.rate_window(config.queries.window)
        validator = planner_validator(topology, plan_file.goals,
                                      strict_balance=settings.strict_balance)
        if topology.fingerprint() != plan.fingerprint:
            hooks.note("the cluster changed since the plan was made (fingerprint differs); "
                       "preflight checks every move's partition")
        _require_network_series(ports, config, plan, {b.id for b in topology.brokers if b.alive},
                                cluster.prometheus)
        for odd in (_cap_above_the_network(config, plan), _cap_far_below_the_plan(config, plan)):
            if odd:
                hooks.note(odd)
        yield _Ready(plan, ports, config, validator)


def _cap_above_the_network(config: ExecutorConfig, plan: ExecutionPlan) -> str:
    """What to say when --max-mbps is above the network capacity of every broker the plan
    copies into (by the capacities in force: the file's or the plan's): the throttle then
    holds nothing back ('' otherwise, or when no capacity is known)."""
    from topology.units import rate_text

    receivers = {b for m in plan.moves for b in m.added_brokers} & set(config.capacities)
    if not receivers:
        return ""
    fastest = max(config.capacities[b].net_in_bytes_per_sec for b in receivers)
    if config.max_bytes_per_sec <= fastest:
        return ""
    return (f"--max-mbps is {rate_text(config.max_bytes_per_sec)}, above the network capacity "
            f"of every broker the plan copies into (at most {rate_text(fastest)}): the "
            "throttle holds nothing back; is the unit right (MB/s)?")


# A run this long at the cap is more likely a unit slip (--max-mbps is MB/s) than meant.
SLOW_RUN_SECONDS = 7 * 24 * 3600.0


def _cap_far_below_the_plan(config: ExecutorConfig, plan: ExecutionPlan) -> str:
    """What to say when the plan's bytes, copied one at a time at --max-mbps, take more than a
    week ('' otherwise): the run is accepted, but the cap may not be the one meant."""
    from topology.units import duration_text, rate_text, size_text

    total = sum(m.bytes_moved for m in plan.moves)
    seconds = total / config.max_bytes_per_sec
    if seconds <= SLOW_RUN_SECONDS:
        return ""
    return (f"--max-mbps is {rate_text(config.max_bytes_per_sec)}: the plan's "
            f"{size_text(total)} take {duration_text(seconds)} at it one move at a time; is "
            "the unit right (MB/s, 10^6 bytes per second)?")


def _require_network_series(ports: Ports, config: ExecutorConfig, plan: ExecutionPlan,
                            live: set[int], prometheus: str | None) -> None:
    """Refuse (MetricsError, exit 4) a Prometheus that answers but has the gate's network
    series for none of the plan's live brokers: it scrapes another cluster, or the queries
    name other metrics, and every move would hold for ever. Some brokers without series (one
    just added, not scraped yet) are the gate's to wait on."""
    from executor.readings import read_network

    brokers = {b for m in plan.moves for b in (*m.current, *m.target)} & live
    if not brokers:
        return
    seen = read_network(ports.metrics, config.queries, brokers)
    if not seen.net_in and not seen.net_out:
        raise MetricsError(
            f"Prometheus at {prometheus} has no network series for any broker of the plan "
            f"({sorted(brokers)}) under the gate's queries (net in: "
            f"{config.queries.render(config.queries.net_in)[:120]}): is it scraping this "
            "cluster? Check --prometheus, and --queries for exporters with other metric names")


def capacities_of_plan(plan_file: PlanFile) -> Capacities | None:
    """The broker capacities the plan was made with (its model): preflight judges the plan
    by them when no --capacities is given, not by equal brokers. A broker the plan does not
    know gets the plan's average capacity."""
    from topology.capacities import CAPACITY_KEYS, Capacities

    stats = plan_file.before.brokers
    if not stats:
        return None
    brokers = {s.id: {k: float(getattr(s.capacity, k)) for k in CAPACITY_KEYS} for s in stats}
    default = {k: sum(b[k] for b in brokers.values()) / len(brokers) for k in CAPACITY_KEYS}
    return Capacities(default=default, brokers=brokers)


def preview_run(settings: StartSettings, *, cluster: ClusterAccess,
                hooks: RunHooks) -> RunPreview:
    """What starting the run would do now (preflight, each move's throttle), reading only."""
    from executor.runner import preview

    plan_file, plan = _read_plan(settings)
    with _ready(settings, cluster, hooks, plan_file, plan) as ready:
        seen = preview(ready.plan, ready.ports, ready.config, validator=ready.validator)
        return RunPreview(seen, len(ready.plan.moves))


def start_run(settings: StartSettings, *, cluster: ClusterAccess,
              hooks: RunHooks) -> RunResult | None:
    """Preflight the plan against the live cluster, take the cluster's run lease, create the
    journal and drive the run to its end; None when the plan has no moves."""
    from executor.journal import JournalFile, header_record, new_run_id, replay
    from executor.runner import Executor

    plan_file, plan = _read_plan(settings)
    if not plan.moves and (plan.log_dirs is None or not plan.log_dirs.moves):
        return None  # nothing to do: the cluster is not contacted
    check_new_journal(settings.journal, settings.plan, plan)
    with _ready(settings, cluster, hooks, plan_file, plan) as ready:
        run_id = new_run_id()
        config, journal = ready.config, settings.journal
        header = header_record(ready.plan, config.to_journal())
        reporter = hooks.watch(replay([header]), config.max_bytes_per_sec,
                               ready.ports.clock.now, [header])
        opened: list[JournalFile] = []

        def create(header: Record) -> JournalFile:
            opened.append(JournalFile.create(journal, header))
            return opened[-1]

        with cluster_lease(cluster.bootstrap, cluster.command_config, run_id, journal,
                           settings.take_over_lease, hooks.note) as hold:
            try:
                executor = Executor.start(ready.plan, ready.ports, config, create,
                                          validator=ready.validator, reporter=reporter,
                                          run_id=run_id)
                hooks.started(journal, run_id)
                report = _drive(executor, journal, hooks, hold)
            finally:  # its lock goes with the run, also in a process that runs on (auto)
                for sink in opened:
                    sink.close()
        return RunResult(report, journal, ready.ports.clock,
                         left_on_drained(ready.ports, plan_file, report))


def resume_run(settings: ResumeSettings, *, cluster: ClusterAccess,
               hooks: RunHooks) -> RunResult:
    """Reconcile the journal with the cluster (moves in flight, throttles present) and drive
    the rest of the run with its own settings except `settings.overrides`. A corrupt journal,
    or an adaptive run without capacities, is refused before the cluster is contacted."""
    from executor.journal import header_settings, replay
    from executor.runner import Executor

    path = settings.journal
    with _journal(path) as (sink, records):
        config = ExecutorConfig.from_journal(header_settings(records),
                                             overrides=settings.overrides)
        if config.adaptive and cluster.capacities is None:
            raise InputError("the run used --adaptive: pass --capacities FILE to keep it, or "
                             "--no-adaptive to resume at --max-mbps on every broker")
        with _connected(cluster, records, path, settings.take_over_lease,
                        hooks.note) as (ports, hold):
            if config.adaptive and cluster.capacities is not None:
                config = replace(config, capacities=_capacities(ports, cluster.capacities))
            run = replay(records)
            _require_network_series(ports, config, run.plan, {b.id for b in ports.admin.brokers()},
                                    cluster.prometheus)
            reporter = hooks.watch(run, config.max_bytes_per_sec, ports.clock.now, records)
            executor = Executor.resume(records, sink, ports, config, reporter,
                                       retry_failed=settings.retry_failed)
            report = _drive(executor, path, hooks, hold)
            from kafka_rebalance.usecases.status import plan_of_run

            plan_file = plan_of_run(path, None, records, [])
            warnings = left_on_drained(ports, plan_file, report) if plan_file else ()
    return RunResult(report, path, ports.clock, warnings)


def left_on_drained(ports: Ports, plan_file: PlanFile, report: RunReport) -> tuple[str, ...]:
    """After a completed drain (`plan --remove-broker`), the partitions its brokers still
    hold: topics made after the plan. The run did what the plan said, but taking the brokers
    out now would lose them (every replica there) or leave them short."""
    from executor.records import RunOutcome
    from kafka_rebalance.core.names import listed

    drained = plan_file.goals.remove_brokers
    if not drained or report.outcome is not RunOutcome.COMPLETED:
        return ()
    try:
        held = sorted((p for p in ports.admin.partitions() if drained & set(p.replicas)),
                      key=lambda p: (p.topic, p.partition))
    except RebalanceError:
        return ()  # the summary stands; the next plan will see them
    if not held:
        return ()
    only = [f"{p.topic}-{p.partition}" for p in held if set(p.replicas) <= drained]
    lost = (f"; {len(only)} have every replica there ({listed(only, 5)}) and would be lost"
            if only else "")
    ids = ",".join(str(b) for b in sorted(drained))
    return (f"broker(s) {sorted(drained)} still hold {len(held)} partition(s) the plan did "
            f"not move ({listed([f'{p.topic}-{p.partition}' for p in held], 5)}: made after "
            f"it, or left by it){lost}: before taking the broker(s) out, plan again with "
            "--remove-broker "
            f"{ids} and run that (execute --cordon-drained keeps new topics off them during "
            "the drain)",)


def cancel_run(settings: JournalSettings, *, cluster: ClusterAccess,
               hooks: RunHooks) -> RunResult | CancelAsked:
    """Cancel the run: revert the reassignment in flight (KIP-455) and restore the throttles.
    An executor running on the journal is asked to do it itself (CancelAsked)."""
    from executor.journal import journal_in_use, replay, request_cancel
    from executor.runner import Executor

    path = settings.journal
    if journal_in_use(path):
        request_cancel(path)
        return CancelAsked(path)
    with _journal(path) as (sink, records):
        config = _own_config(records, settings)
        with _connected(cluster, records, path, settings.take_over_lease,
                        hooks.note) as (ports, hold):
            reporter = hooks.watch(replay(records), config.max_bytes_per_sec, ports.clock.now,
                                   records)
            executor = Executor.for_cancel(records, sink, ports, config, reporter)
            hold.started = True
            executor.cancel()
            report = _drive(executor, path, hooks, hold)
    return RunResult(report, path, ports.clock)


def clear_run_throttles(settings: JournalSettings, *, cluster: ClusterAccess,
                        note: Notify) -> ThrottlesCleared:
    """Restore every throttle config the journal says its run may have left (operator values
    that existed before the run are put back exactly)."""
    from executor.journal import replay
    from executor.runner import clear_throttles_from

    with _journal(settings.journal) as (sink, records):
        config = _own_config(records, settings)
        with _connected(cluster, records, settings.journal, settings.take_over_lease,
                        note) as (ports, hold):
            problems = clear_throttles_from(records, sink, ports, config)
            hold.ended = not problems
    return ThrottlesCleared(problems, len(replay(records).plan.moves))


@contextmanager
def _journal(path: Path) -> Iterator[tuple[JournalFile, list[Record]]]:
    """An existing run's journal, locked, and its records; a corrupt journal is refused here,
    before the cluster is contacted."""
    from executor.journal import JournalFile, replay

    sink, records = JournalFile.open(path)
    try:
        replay(records)
        yield sink, records
    finally:
        sink.close()


@contextmanager
def _connected(cluster: ClusterAccess, records: list[Record], journal: Path,
               take_over_lease: str | None, note: Notify) -> Iterator[tuple[Ports, LeaseHold]]:
    """The real ports and the cluster's run lease of the journal's run. The lease stays with
    the run when this process stops while the journal has work left and the run held the
    lease when this process took it (work under way on the cluster); otherwise a refusal (a
    journal whose moves are not in place, a preflight that fails) gives it back, released."""
    from executor.journal import leaves_work, run_id_of

    with (real_ports(cluster.bootstrap, cluster.prometheus, cluster.command_config) as ports,
          cluster_lease(cluster.bootstrap, cluster.command_config, run_id_of(records, journal),
                        journal, take_over_lease, note) as hold):
        hold.started = hold.inherited and leaves_work(records)
        yield ports, hold


def _own_config(records: list[Record], settings: JournalSettings) -> ExecutorConfig:
    """The run's own settings for a cancel or a throttle restore (which start no copy, so
    never at adaptive rates)."""
    from executor.journal import header_settings

    return ExecutorConfig.from_journal(
        header_settings(records),
        overrides=RunOverrides(adaptive=False, poll_seconds=settings.poll_seconds))


def _capacities(ports: Ports, capacities: Path) -> dict[int, Capacity]:
    """Each live broker's capacity from the capacities file (for adaptive rates)."""
    from topology.capacities import read_capacities

    caps = read_capacities(capacities)
    return {b.id: caps.for_broker(b.id, b.rack) for b in ports.admin.brokers()}


def _drive(executor: Executor, journal: Path, hooks: RunHooks, hold: LeaseHold) -> RunReport:
    """Run to the end inside the hooks' context (progress, interrupts: executor.drive), stopping
    the moment the lease `hold` passes to another process."""
    from executor.drive import drive_run

    return drive_run(executor, hold, running=hooks.running(executor, journal)).report
