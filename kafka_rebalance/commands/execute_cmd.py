"""`rebalance execute`, `status`, `cancel`, `resume` and `clear-throttles`.

The commands parse flags into the run use cases' settings (`kafka_rebalance.usecases.run`), call
them and render: the progress view, the summary and the exit code
(`kafka_rebalance.commands.execute_run`). The journal is the run: by default it lives next to the
plan (`PLAN.json.journal`); the other commands find it with --journal, from the plan path, or as the
only `*.journal` file in the current directory.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from executor.config import (
    DEFAULT_GATE_TIMEOUT_SECONDS,
    RunOverrides,
    parse_concurrency,
)
from executor.journal import find_journal
from executor.slo import (
    DEFAULT_EVERY_SECONDS,
    DEFAULT_FETCH_P99_MS,
    DEFAULT_FLUSH_P95_MS,
    DEFAULT_PRODUCE_P99_MS,
    DEFAULT_UNDER_REPLICATED,
)
from kafka_rebalance.commands.execute_run import RunScreen, conclude, print_summary
from kafka_rebalance.commands.render import console, note, notes_held, say
from kafka_rebalance.commands.report_cmd import (
    HtmlOption,
    HtmlPrometheusOption,
    check_status_html,
    write_status_html,
)
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.report.run_progress import preview_table
from kafka_rebalance.usecases.cluster import ClusterAccess
from kafka_rebalance.usecases.run import (
    CancelAsked,
    JournalSettings,
    ResumeSettings,
    StartSettings,
    cancel_run,
    clear_run_throttles,
    preview_run,
    resume_run,
    start_run,
)
from kafka_rebalance.usecases.run_settings import (
    check_metrics_port,
    config_from_flags,
    new_cap,
    parse_finish_by,
    read_queries,
    slo_from_flags,
)

if TYPE_CHECKING:

    from kafka_rebalance.usecases.run import RunPreview

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



Cooldown = Annotated[float, typer.Option(
    help="Seconds to wait after each move before the gate is checked.")]
QuotaWindow = Annotated[float | None, typer.Option(
    help="Seconds of Kafka's replication quota window (replication.quota.window.num x "
    ".size.seconds). A move into a broker that received a copy within it waits until the "
    "window has passed (its quota would otherwise let the first seconds run far above "
    "--max-mbps), unless it takes that broker over from a copy ending now. Default: the "
    "longest window the brokers describe (Kafka's 11 s); a shorter value is raised to it. "
    "0 disables.",
    show_default=False)]
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
GateTimeout = Annotated[float, typer.Option(
    help="Gate: stop the run (resumable) when a gate stays closed this many seconds (what "
    "keeps it closed is named; `rebalance resume` goes on).")]
P99 = Annotated[float | None, typer.Option(
    "--gate-produce-p99-ms", "--produce-p99-max-ms", metavar="MS",
    help="Gate: also wait until the produce p99 latency is under this many ms (as the other "
    "--gate-* flags; --produce-p99-max-ms is the older name).")]
SloGuard = Annotated[bool, typer.Option(
    help="While a move copies, read each broker's client indicators every --slo-interval "
    "seconds: a breach halves the rates of the copies through that broker (never under an "
    "eighth of --max-mbps), a healthy step raises them by a tenth of --max-mbps up to it. "
    "Each decision is journaled and exported.")]
SloProduce = Annotated[float, typer.Option(
    help="SLO guard: produce p99 latency limit per broker, ms (0: not guarded).")]
SloFetch = Annotated[float, typer.Option(
    help="SLO guard: consumer fetch p99 latency limit per broker, ms; above fetch.max.wait.ms "
    "(500 ms by default), which an idle consumer's fetch waits by design (0: not guarded).")]
SloFlush = Annotated[float, typer.Option(
    help="SLO guard: log flush p95 latency limit per broker, ms (0: not guarded).")]
SloUrp = Annotated[int, typer.Option(
    help="SLO guard: under-replicated partitions allowed outside the moves (Kafka does not "
    "count replicas being added).")]
SloLag = Annotated[float | None, typer.Option(
    help="SLO guard: consumer lag limit in messages (the largest group's total, where a lag "
    "series exists; see --queries). Default: not guarded.")]
SloInterval = Annotated[float, typer.Option(
    help="SLO guard: seconds between its steps (latency percentiles move slowly; a step "
    "shorter than the rate window reacts to noise).")]
SloBaseline = Annotated[bool, typer.Option(
    "--slo-baseline/--slo-absolute",
    help="SLO guard: judge each indicator against the cluster's own value before the run's "
    "first copy (a breach: past the threshold and past twice a broker's own latency before, "
    "or more under-replicated partitions than before), or against the thresholds alone.")]
Poll = Annotated[float, typer.Option(help="Seconds between polls of the cluster.",
                                     hidden=True)]
RateWindow = Annotated[str, typer.Option(
    help="Rate window of the gate's PromQL queries, e.g. 30s or 2m. 'auto': four scrape "
    "intervals of the Prometheus targets (at least 10s; 1m when they cannot be read). Short, "
    "unlike snapshot's --rate-window (what the planner balances), so a copy's traffic is "
    "seen to fade within seconds.")]
QueriesFile = Annotated[Path | None, typer.Option(
    "--queries", help="YAML file overriding the gate's PromQL templates for exporters that "
    "name series differently: net_in, net_out (per broker, bytes/s), traffic_in, traffic_out "
    "(client traffic, for --adaptive), produce_p99_ms, and the SLO guard's fetch_p99_ms, "
    "flush_p95_ms, under_replicated (per broker) and consumer_lag (one value); "
    "reassignment_in and reassignment_out (copies per broker); broker_label, window. "
    "Templates use "
    "{window} for the rate window; see topology/promql.py for the defaults.")]
FinishBy = Annotated[str | None, typer.Option(
    help="End of the maintenance window: HH:MM (next such local time) or an ISO 8601 time. A "
    "move whose copy at the cap would end later is not started; the run stops there and "
    "`rebalance resume` continues it. Moves in flight always finish.")]
MetricsPort = Annotated[int | None, typer.Option(
    help="Serve the executor's own Prometheus metrics on this port.")]


def _run_id(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise InputError("--take-over-lease is empty: give the id of the killed run, as the "
                         "refusal names it")
    return value


TakeOver = Annotated[str | None, typer.Option(
    "--take-over-lease", metavar="RUN_ID", callback=_run_id,
    help="Take the cluster's run lease from run RUN_ID, which was killed and will not come "
    "back (only a run you name; a live or other run is still refused).")]


def execute(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN.json", help="A plan file.")],
    bootstrap: Bootstrap,
    prometheus: PrometheusUrl,
    max_mbps: Annotated[float, typer.Option(
        help="Replication throttle per broker in MB/s (megabytes per second, 10^6 bytes/s): "
        "the leader rate on source brokers and the follower rate on target brokers.")],
    concurrency: Annotated[str, typer.Option(
        help="Moves in flight at once: a number, or auto for as many as keep each broker "
        "sending for at most one move and receiving for at most one (the busiest brokers' "
        "moves first). A broker that only keeps its replica is not busy.")] = "1",
    cooldown: Cooldown = 0.0,
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
    strict_balance: Annotated[bool, typer.Option(
        "--strict-balance/--allow-worse-balance",
        help="Refuse a plan that now leaves some resource further from balance than the "
        "cluster is (traffic drifts in minutes; by default the drift is told with its numbers "
        "and the run goes on). The hard rules (replication factor, racks, live brokers, "
        "capacity) refuse either way.")] = False,
    cordon_drained: Annotated[bool, typer.Option(
        "--cordon-drained",
        help="Before the first move, cordon the brokers the plan drains (--remove-broker): "
        "cordoned.log.dirs=* (KIP-1066, Kafka 4.3), so topics created during a long drain "
        "stay off them. A cancel puts their value back; a completed drain leaves them "
        "cordoned.")] = False,
    command_config: CommandConfig = None,
    capacities: Annotated[Path | None, typer.Option(
        help="Capacities YAML (needed by --adaptive; without it the validator treats brokers "
        "as equal).")] = None,
    metrics_port: MetricsPort = None,
    gate_margin: GateMargin = 0.10,
    gate_floor_mbps: GateFloor = 1.0,
    gate_samples: GateSamples = 3,
    gate_timeout: GateTimeout = DEFAULT_GATE_TIMEOUT_SECONDS,
    produce_p99_max_ms: P99 = None,
    quota_window: QuotaWindow = None,
    final_gate: Annotated[bool, typer.Option(
        help="Also wait for the gate after the last move, so the run ends on a settled "
        "cluster (useful when another run follows at once).")] = False,
    finish_by: FinishBy = None,
    rate_window: RateWindow = "auto",
    queries_file: QueriesFile = None,
    slo_guard: SloGuard = True,
    slo_produce_p99_ms: SloProduce = DEFAULT_PRODUCE_P99_MS,
    slo_fetch_p99_ms: SloFetch = DEFAULT_FETCH_P99_MS,
    slo_flush_p95_ms: SloFlush = DEFAULT_FLUSH_P95_MS,
    slo_under_replicated: SloUrp = DEFAULT_UNDER_REPLICATED,
    slo_lag: SloLag = None,
    slo_interval: SloInterval = DEFAULT_EVERY_SECONDS,
    slo_baseline: SloBaseline = True,
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
    # every flag is checked before the plan is read or the cluster contacted
    if adaptive and capacities is None:
        raise InputError("--adaptive needs --capacities FILE (headroom = capacity minus "
                         "client traffic)")
    check_metrics_port(metrics_port)
    config = config_from_flags(
        max_mbps=max_mbps, concurrency=parse_concurrency(concurrency), cooldown=cooldown,
        adaptive=adaptive,
        elect_leaders=elect_leaders, allow_under_replicated=allow_under_replicated,
        gate_margin=gate_margin, gate_floor_mbps=gate_floor_mbps, gate_samples=gate_samples,
        gate_timeout=gate_timeout, produce_p99_max_ms=produce_p99_max_ms,
        poll_seconds=poll_seconds, quota_window=quota_window, final_gate=final_gate,
        slo=slo_from_flags(guard=slo_guard, produce_p99_ms=slo_produce_p99_ms,
                           fetch_p99_ms=slo_fetch_p99_ms, flush_p95_ms=slo_flush_p95_ms,
                           under_replicated=slo_under_replicated, lag=slo_lag,
                           interval=slo_interval, baseline=slo_baseline))
    deadline = parse_finish_by(finish_by, _local_now()) if finish_by is not None else None
    queries, derive_window = read_queries(rate_window, queries_file)
    settings = StartSettings(
        plan=plan_path, journal=find_journal(plan_path, journal),
        config=replace(config, finish_by=deadline, allow_quota_burst=allow_quota_burst,
                       queries=queries),
        derive_rate_window=derive_window, strict_balance=strict_balance,
        take_over_lease=take_over_lease, cordon_drained=cordon_drained)
    cluster = ClusterAccess(bootstrap=bootstrap, prometheus=prometheus,
                            command_config=command_config, capacities=capacities)
    # notes wait until the run starts: a refused run's error line comes first on stderr
    with notes_held() as notes:
        screen = RunScreen(metrics_port, notes)
        if dry_run:
            _show_dry_run(preview_run(settings, cluster=cluster, hooks=screen))
            return
        result = start_run(settings, cluster=cluster, hooks=screen)
        if result is None:
            console.print("The plan has no moves: nothing to do.")
            return
    conclude(result)


def _show_dry_run(seen: RunPreview) -> None:
    console.print(preview_table(seen.preview.throttles, seen.moves))
    for warning in seen.preview.warnings:
        note(warning)
    if seen.preview.problems:
        raise ExecutionError("preflight would refuse the run:\n- "
                             + "\n- ".join(seen.preview.problems))
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

    from kafka_rebalance.report.run_status import status_document, status_table
    from kafka_rebalance.usecases.status import run_status

    path = find_journal(plan_path, journal)
    check_status_html(html, prometheus, {"PLAN.json": plan_path, "--journal": path})
    view, records = run_status(plan_path, journal)
    if html is not None:
        write_status_html(html, path, records, plan_path, prometheus)
    if as_json:
        typer.echo(json.dumps(status_document(view), indent=2))
        return
    console.print(status_table(view))
    if view.running:
        console.print("an executor is running on this journal", highlight=False)


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
    check_metrics_port(metrics_port)
    path = find_journal(plan_path, journal)
    overrides = RunOverrides(
        max_bytes_per_sec=new_cap(max_mbps), adaptive=adaptive,
        allow_under_replicated=allow_under_replicated, allow_quota_burst=allow_quota_burst,
        finish_by=parse_finish_by(finish_by, _local_now()) if finish_by is not None else None,
        poll_seconds=poll_seconds)
    result = resume_run(ResumeSettings(journal=path, overrides=overrides,
                                       retry_failed=retry_failed,
                                       take_over_lease=take_over_lease),
                        cluster=ClusterAccess(bootstrap=bootstrap, prometheus=prometheus,
                                              command_config=command_config,
                                              capacities=capacities),
                        hooks=RunScreen(metrics_port))
    conclude(result)


def _local_now() -> datetime:
    return datetime.now().astimezone()


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
    path = find_journal(plan_path, journal)
    outcome = cancel_run(JournalSettings(journal=path, poll_seconds=poll_seconds,
                                         take_over_lease=take_over_lease),
                         cluster=ClusterAccess(bootstrap=bootstrap, prometheus=prometheus,
                                               command_config=command_config),
                         hooks=RunScreen())
    if isinstance(outcome, CancelAsked):
        say(f"asked the executor running on {outcome.journal} to cancel; it reverts the move "
            "in flight and restores throttles (`rebalance status` shows the outcome)")
        return
    print_summary(outcome.journal, outcome.report.outcome.value, outcome.clock.now())
    if outcome.report.throttles_left:
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
    cleared = clear_run_throttles(
        JournalSettings(journal=find_journal(plan_path, journal),
                        take_over_lease=take_over_lease),
        cluster=ClusterAccess(bootstrap=bootstrap, prometheus=prometheus,
                              command_config=command_config),
        note=note)
    if cleared.problems:
        raise ExecutionError("some throttles could not be restored:\n- "
                             + "\n- ".join(cleared.problems))
    console.print(f"throttles restored ({cleared.moves_checked} move(s) in the journal checked)",
                  highlight=False)
