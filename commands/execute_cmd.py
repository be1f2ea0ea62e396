"""`rebalance execute`, `status`, `cancel`, `resume` and `clear-throttles`.

The commands parse flags, build one ExecutorConfig and the real ports (Kafka admin, Prometheus,
system clock), call the executor core and render. The journal is the run: by default it lives
next to the plan (`PLAN.json.journal`); the other commands find it with --journal, from the plan
path, or as the only `*.journal` file in the current directory.

The executor core (and the plan file's numpy) is imported inside the commands that run it, so
that `rebalance` starts fast for every other command.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from commands.execute_render import preview_table
from commands.execute_run import conclude, drive, print_summary, progress_view
from commands.execute_setup import (
    adaptive_config,
    build_config,
    check_metrics_port,
    check_new_journal,
    journal_config,
    journal_for,
    journal_in_use,
    journal_pace,
    journal_records,
    parse_finish_by,
    read_queries,
    was_adaptive,
    with_scrape_window,
)
from commands.render import console, err_console, note, notes_held, say
from commands.report_cmd import (
    HtmlOption,
    HtmlPrometheusOption,
    check_status_html,
    write_status_html,
)
from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS, ExecutorConfig, Ports
from topology.errors import ExecutionError, InputError
from usecases.cluster import cluster_lease, live_topology, real_ports

if TYPE_CHECKING:
    from executor.plan import ExecutionPlan
    from executor.preflight import PlanValidator

# ---- shared options --------------------------------------------------------------------------
Bootstrap = Annotated[str, typer.Option(help="Kafka bootstrap servers, HOST:PORT[,...].")]
PrometheusUrl = Annotated[str, typer.Option(
    "--prometheus", help="Prometheus URL whose series the gates read (e.g. http://host:9090).")]
CommandConfig = Annotated[Path | None, typer.Option(
    help="Kafka client security settings (.properties or YAML); env REBALANCE_* also works.")]
JournalOpt = Annotated[Path | None, typer.Option(
    "--journal", help="The run's journal. Default: PLAN.json.journal next to the plan, or the "
    "only *.journal file in the current directory.")]
PlanArg = Annotated[Path | None, typer.Argument(
    metavar="[PLAN.json]", help="The plan whose journal (PLAN.json.journal) to use.")]



QuotaBurst = Annotated[bool, typer.Option(
    help="Start moves onto brokers whose follower quota a topic's "
    "follower.replication.throttled.replicas (\"*\", or entries naming them) keeps counting: "
    "Kafka then lets each such move copy up to the cap x 11 s at full speed before the "
    "throttle holds. Without it such a run is refused, naming the topics.")]


GateMargin = Annotated[float, typer.Option(
    help="Gate: a broker is settled when its network in/out is within this fraction above "
    "its pre-move baseline.")]
GateFloor = Annotated[float, typer.Option(
    help="Gate: ... or under this absolute rate, MB/s.")]
GateSamples = Annotated[int, typer.Option(help="Gate: consecutive settled samples needed.")]
GateTimeout = Annotated[float | None, typer.Option(
    help="Gate: stop the run (resumable) when a gate stays closed this many seconds.")]
P99 = Annotated[float | None, typer.Option(
    help="Gate: also wait until the produce p99 latency is under this many ms.")]
Poll = Annotated[float, typer.Option(help="Seconds between polls of the cluster.",
                                     hidden=True)]
RateWindow = Annotated[str, typer.Option(
    help="Rate window of the gate's PromQL queries, e.g. 30s or 2m. 'auto': four scrape "
    "intervals of the Prometheus targets (at least 10s; 1m when they cannot be read).")]
QueriesFile = Annotated[Path | None, typer.Option(
    "--queries", help="YAML file overriding the gate's PromQL templates for exporters that "
    "name series differently: net_in, net_out (per broker, bytes/s), traffic_in, traffic_out "
    "(client traffic, for --adaptive), produce_p99_ms, broker_label, window. Templates use "
    "{window} for the rate window; see topology/promql.py for the defaults.")]
FinishBy = Annotated[str | None, typer.Option(
    help="End of the maintenance window: HH:MM (next such local time) or an ISO 8601 time. A "
    "move whose copy at the cap would end later is not started; the run stops there and "
    "`rebalance resume` continues it. Moves in flight always finish.")]
MetricsPort = Annotated[int | None, typer.Option(
    help="Serve the executor's own Prometheus metrics on this port.")]
TakeOver = Annotated[str | None, typer.Option(
    "--take-over-lease", metavar="RUN_ID",
    help="Take the cluster's run lease from run RUN_ID, which was killed and will not come "
    "back (only a run you name; a live or other run is still refused).")]


def execute(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN.json", help="A plan file.")],
    bootstrap: Bootstrap,
    prometheus: PrometheusUrl,
    max_mbps: Annotated[float, typer.Option(
        help="Replication throttle per broker in MB/s (megabytes per second, 10^6 bytes/s): "
        "the leader rate on source brokers and the follower rate on target brokers.")],
    concurrency: Annotated[int, typer.Option(
        help="Moves in flight at once (never two on one broker).")] = 1,
    cooldown: Annotated[float, typer.Option(
        help="Seconds to wait after each move before the gate is checked.")] = 0.0,
    adaptive: Annotated[bool, typer.Option(
        help="Set each broker's rate from its headroom (capacity minus client traffic), never "
        "above --max-mbps.")] = False,
    dry_run: Annotated[bool, typer.Option(
        help="Run the preflight and show each move's throttle; change nothing.")] = False,
    journal: JournalOpt = None,
    elect_leaders: Annotated[bool, typer.Option(
        help="Elect the preferred leader after each move.")] = True,
    allow_under_replicated: Annotated[bool, typer.Option(
        help="Start even if partitions are under-replicated.")] = False,
    allow_quota_burst: QuotaBurst = False,
    allow_worse_balance: Annotated[bool, typer.Option(
        help="Run a plan that leaves some resource further from balance than the cluster is "
        "now (moves made for another reason, or a plan the cluster has drifted from); the "
        "hard rules (replication factor, racks, live brokers, capacity) are still checked.")
    ] = False,
    command_config: CommandConfig = None,
    capacities: Annotated[Path | None, typer.Option(
        help="Capacities YAML (needed by --adaptive; without it the validator treats brokers "
        "as equal).")] = None,
    metrics_port: MetricsPort = None,
    gate_margin: GateMargin = 0.10,
    gate_floor_mbps: GateFloor = 1.0,
    gate_samples: GateSamples = 3,
    gate_timeout: GateTimeout = None,
    produce_p99_max_ms: P99 = None,
    quota_window: Annotated[float, typer.Option(
        help="Seconds the next move waits after a move (overlapping --cooldown) so that Kafka's "
        "replication quota window (replication.quota.window.num x .size.seconds) has forgotten "
        "it; otherwise the next move's first seconds run far above --max-mbps. 0 disables.")
    ] = DEFAULT_QUOTA_WINDOW_SECONDS,
    final_gate: Annotated[bool, typer.Option(
        help="Also wait for the gate after the last move, so the run ends on a settled "
        "cluster (useful when another run follows at once).")] = False,
    finish_by: FinishBy = None,
    rate_window: RateWindow = "auto",
    queries_file: QueriesFile = None,
    poll_seconds: Poll = 1.0,
    take_over_lease: TakeOver = None,
) -> None:
    """Execute a plan one partition at a time under a replication throttle.

    Between moves it waits until the source and target brokers' network is back near baseline.

    Every step is journaled first (PLAN.json.journal by default).

    Ctrl-C or a crash leaves the journal: `rebalance resume` continues the run,
    `rebalance cancel` reverts the move in flight and restores the throttles,
    `rebalance status` shows where the run stands.
    """
    from executor.journal import JournalFile, header_record, new_run_id, replay
    from executor.plan import ExecutionPlan
    from executor.preflight import planner_validator
    from executor.runner import Executor
    from planner.planfile_json import read_plan

    # every flag is checked before the plan is read or the cluster contacted
    if adaptive and capacities is None:
        raise InputError("--adaptive needs --capacities FILE (headroom = capacity minus "
                         "client traffic)")
    check_metrics_port(metrics_port)
    config = build_config(max_mbps, concurrency, cooldown, adaptive, elect_leaders,
                          allow_under_replicated, gate_margin, gate_floor_mbps,
                          gate_samples, gate_timeout, produce_p99_max_ms, poll_seconds,
                          None, quota_window, final_gate)
    if finish_by is not None:
        config = _with(config, finish_by=parse_finish_by(finish_by, _local_now()))
    if allow_quota_burst:
        config = _with(config, allow_quota_burst=True)
    queries, derive_window = read_queries(rate_window, queries_file)
    config = _with(config, queries=queries)
    plan_file = read_plan(plan_path)
    plan = ExecutionPlan.from_plan_file(plan_file)
    journal_path = journal_for(plan_path, journal)
    if not dry_run:
        check_new_journal(journal_path)
    # notes wait until the run starts: a refused run's error line comes first on stderr
    with real_ports(bootstrap, prometheus, command_config) as ports, notes_held() as notes:
        topology = live_topology(ports, bootstrap, capacities)
        config = _with(config, capacities={b.id: b.capacity for b in topology.brokers})
        if derive_window:
            config = _with(config, queries=with_scrape_window(config.queries, prometheus))
            note(f"{config.queries.window} (from the scrape interval; --rate-window sets it)",
                 label="gate rate window", style="")
        validator = planner_validator(topology, plan_file.goals,
                                      allow_worse_balance=allow_worse_balance)
        if topology.fingerprint() != plan.fingerprint:
            note("the cluster changed since the plan was made (fingerprint differs); preflight "
                 "checks every move's partition")
        if dry_run:
            _dry_run(plan, ports, config, validator)
            return
        if not plan.moves:
            console.print("The plan has no moves: nothing to do.")
            return
        run_id = new_run_id()
        view, reporter = progress_view(replay([header_record(plan, config.summary())]),
                                       config.max_bytes_per_sec, metrics_port, ports.clock.now)
        with cluster_lease(bootstrap, command_config, run_id, journal_path,
                           take_over_lease, note) as hold:
            executor = Executor.start(plan, ports, config,
                                      lambda header: JournalFile.create(journal_path, header),
                                      validator=validator, reporter=reporter, run_id=run_id)
            notes.release()
            hold.started = True
            say(f"journal: {journal_path} (run {run_id})", err_console)
            report = drive(executor, view, journal_path)
            hold.ended = True
        conclude(report, executor, journal_path)


def _dry_run(plan: ExecutionPlan, ports: Ports, config: ExecutorConfig,
             validator: PlanValidator) -> None:
    from executor.runner import preview

    seen = preview(plan, ports, config, validator=validator)
    console.print(preview_table(seen.throttles, len(plan.moves)))
    for warning in seen.warnings:
        note(warning)
    if seen.problems:
        raise ExecutionError("preflight would refuse the run:\n- " + "\n- ".join(seen.problems))
    console.print("preflight: ok (dry run, nothing changed)")


def status(plan_path: PlanArg = None, journal: JournalOpt = None,
           as_json: Annotated[bool, typer.Option(
               "--json", help="Print a JSON document (version 1) instead: state, moves and "
               "bytes done of total, the moves in flight, start, elapsed and ETA.")] = False,
           html: HtmlOption = None, prometheus: HtmlPrometheusOption = None,
           ) -> None:
    """Show a run's progress from its journal (works while the run is going): whether an
    executor is running on it, moves and bytes done, the move in flight, and an ETA."""
    import json
    import time

    from commands.run_report import status_document, status_table, status_view

    path = journal_for(plan_path, journal)
    check_status_html(html, prometheus, {"PLAN.json": plan_path, "--journal": path})
    records = journal_records(path)
    running = journal_in_use(path)
    cap, settle = journal_pace(records)
    view = status_view(records, str(path), _plan_of(plan_path, path), running, cap, settle,
                       time.time())
    if html is not None:
        write_status_html(html, path, records, plan_path, prometheus)
    if as_json:
        typer.echo(json.dumps(status_document(view), indent=2))
        return
    console.print(status_table(view))
    if running:
        console.print("an executor is running on this journal", highlight=False)


def _plan_of(plan_path: Path | None, journal: Path) -> str | None:
    """The plan file: as given, else the journal's name without .journal when that exists."""
    if plan_path is not None:
        return str(plan_path)
    suffix = ".journal"
    if journal.name.endswith(suffix) and len(journal.name) > len(suffix):
        plan = journal.with_name(journal.name[:-len(suffix)])
        if plan.is_file():
            return str(plan)
    return None


def resume(
    bootstrap: Bootstrap,
    prometheus: PrometheusUrl,
    plan_path: PlanArg = None,
    journal: JournalOpt = None,
    max_mbps: Annotated[float | None, typer.Option(
        help="New throttle cap, MB/s (10^6 bytes/s) per broker; default: the run's own.")] = None,
    allow_under_replicated: Annotated[bool, typer.Option(
        help="Resume even if partitions are under-replicated.")] = False,
    allow_quota_burst: QuotaBurst = False,
    adaptive: Annotated[bool | None, typer.Option(
        "--adaptive/--no-adaptive", help="Adaptive rates (needs --capacities); default: as the "
        "run was started.")] = None,
    capacities: Annotated[Path | None, typer.Option(
        help="Capacities YAML for --adaptive (capacities are not kept in the journal).")
    ] = None,
    command_config: CommandConfig = None,
    take_over_lease: TakeOver = None,
    retry_failed: Annotated[bool, typer.Option(
        help="Start the run's failed and cancelled moves again, like fresh moves (once the "
        "brokers they need are back and `clear-throttles` restored what they left).")] = False,
    metrics_port: MetricsPort = None,
    finish_by: FinishBy = None,
    poll_seconds: Poll = 1.0,
) -> None:
    """Continue an interrupted or stopped run: reconcile the journal with the cluster (moves in
    flight, throttles present) and go on with the run's own settings."""
    from executor.journal import JournalFile, leaves_work, replay, run_id_of
    from executor.runner import Executor

    check_metrics_port(metrics_port)
    path = journal_for(plan_path, journal)
    sink, records = JournalFile.open(path)
    try:
        replay(records)  # a corrupt journal is refused before the cluster is contacted
        config = journal_config(records, max_mbps, poll_seconds)
        if allow_under_replicated:
            config = _with(config, allow_under_replicated=True)
        if allow_quota_burst:
            config = _with(config, allow_quota_burst=True)
        if finish_by is not None:
            config = _with(config, finish_by=parse_finish_by(finish_by, _local_now()))
        adaptive = was_adaptive(records) if adaptive is None else adaptive
        if adaptive and capacities is None:
            raise InputError("the run used --adaptive: pass --capacities FILE to keep it, or "
                             "--no-adaptive to resume at --max-mbps on every broker")
        with (real_ports(bootstrap, prometheus, command_config) as ports,
              cluster_lease(bootstrap, command_config, run_id_of(records, path), path,
                            take_over_lease, note) as hold):
            hold.started = leaves_work(records)
            if adaptive and capacities is not None:
                config = adaptive_config(config, ports, capacities)
            view, reporter = progress_view(replay(records), config.max_bytes_per_sec,
                                           metrics_port, ports.clock.now, records)
            executor = Executor.resume(records, sink, ports, config, reporter,
                                       retry_failed=retry_failed)
            hold.started = True
            report = drive(executor, view, path)
            hold.ended = True
        conclude(report, executor, path)
    finally:
        sink.close()


def _local_now() -> datetime:
    return datetime.now().astimezone()


def _with(config: ExecutorConfig, **changes: Any) -> ExecutorConfig:
    from dataclasses import replace

    return replace(config, **changes)


def cancel(
    bootstrap: Bootstrap,
    prometheus: Annotated[str | None, typer.Option(
        "--prometheus", help="Not needed: a cancelled run skips the gates.")] = None,
    plan_path: PlanArg = None,
    journal: JournalOpt = None,
    command_config: CommandConfig = None,
    take_over_lease: TakeOver = None,
    poll_seconds: Poll = 1.0,
) -> None:
    """Cancel a run: revert the reassignment in flight (KIP-455) and restore the throttles.

    If an executor is running on the journal, it is asked to cancel and does the work itself.
    """
    from executor.journal import JournalFile, leaves_work, replay, request_cancel, run_id_of
    from executor.runner import Executor

    path = journal_for(plan_path, journal)
    if journal_in_use(path):
        request_cancel(path)
        say(f"asked the executor running on {path} to cancel; it reverts the move in flight and "
            "restores throttles (`rebalance status` shows the outcome)")
        return
    sink, records = JournalFile.open(path)
    try:
        replay(records)  # a corrupt journal is refused before the cluster is contacted
        config = journal_config(records, None, poll_seconds)
        with (real_ports(bootstrap, prometheus, command_config) as ports,
              cluster_lease(bootstrap, command_config, run_id_of(records, path), path,
                            take_over_lease, note) as hold):
            hold.started = leaves_work(records)
            view, reporter = progress_view(replay(records), config.max_bytes_per_sec, None,
                                           ports.clock.now, records)
            executor = Executor.for_cancel(records, sink, ports, config, reporter)
            hold.started = True
            executor.cancel()
            report = drive(executor, view, path)
            hold.ended = True
    finally:
        sink.close()
    print_summary(path, report.outcome.value, config.max_bytes_per_sec,
                  executor.ports.clock.now())
    if report.throttles_left:
        raise ExecutionError("cancelled, but throttles could not all be restored: run "
                             "`rebalance clear-throttles` once the brokers answer")


def clear_throttles(
    bootstrap: Bootstrap,
    prometheus: Annotated[str | None, typer.Option(
        "--prometheus", help="Not needed (accepted like the other commands).")] = None,
    plan_path: PlanArg = None,
    journal: JournalOpt = None,
    command_config: CommandConfig = None,
    take_over_lease: TakeOver = None,
) -> None:
    """Restore every throttle config the journal says a run may have left on the cluster
    (operator values that existed before the run are put back exactly)."""
    from executor.journal import JournalFile, leaves_work, replay, run_id_of
    from executor.runner import clear_throttles_from

    path = journal_for(plan_path, journal)
    sink, records = JournalFile.open(path)
    try:
        replay(records)  # a corrupt journal is refused before the cluster is contacted
        config = journal_config(records, None, 1.0)
        with (real_ports(bootstrap, prometheus, command_config) as ports,
              cluster_lease(bootstrap, command_config, run_id_of(records, path), path,
                            take_over_lease, note) as hold):
            hold.started = leaves_work(records)
            problems = clear_throttles_from(records, sink, ports, config)
            hold.ended = not problems
    finally:
        sink.close()
    if problems:
        raise ExecutionError("some throttles could not be restored:\n- "
                             + "\n- ".join(problems))
    left = [m.name for m in replay(records).plan.moves]
    console.print(f"throttles restored ({len(left)} move(s) in the journal checked)",
                  highlight=False)
