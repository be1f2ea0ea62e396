"""`rebalance auto`: scheduled auto-balancing inside maintenance windows.

Parses flags into the use case's settings (one AutoSettings for every cycle, the loop's and the
cluster's) and calls `kafka_rebalance.usecases.auto.run_auto`, which holds the state directory's
lock and runs cycles once (--once, for cron or a systemd timer) or forever. Each event is one
timestamped line on stdout; SIGTERM cancels a run in flight like Ctrl-C.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from executor.config import DEFAULT_GATE_TIMEOUT_SECONDS, MB
from executor.slo import (
    DEFAULT_EVERY_SECONDS,
    DEFAULT_FETCH_P99_MS,
    DEFAULT_FLUSH_P95_MS,
    DEFAULT_PRODUCE_P99_MS,
    DEFAULT_UNDER_REPLICATED,
)
from kafka_rebalance.autobalance.healing import DEFAULT_GRACE_SECONDS
from kafka_rebalance.autobalance.windows import resolve_zone
from kafka_rebalance.commands.execute_cmd import (
    Bootstrap,
    CommandConfig,
    Cooldown,
    Poll,
    QueriesFile,
    QuotaWindow,
    RateWindow,
    SloBaseline,
    SloFetch,
    SloFlush,
    SloGuard,
    SloInterval,
    SloLag,
    SloProduce,
    SloUrp,
)
from kafka_rebalance.commands.render import console, note
from kafka_rebalance.core.errors import ExecutionError
from kafka_rebalance.core.names import visible
from kafka_rebalance.report.run_lines import RunLines
from kafka_rebalance.usecases.auto import LoopSettings, run_auto
from kafka_rebalance.usecases.cluster import ClusterAccess
from kafka_rebalance.usecases.run_settings import slo_from_flags
from kafka_rebalance.usecases.signals import sigterm_as_ctrl_c

if TYPE_CHECKING:
    from executor.config import Event
    from kafka_rebalance.autobalance.orchestrator import AutoSettings, CycleResult


class Lines:
    """One timestamped line per event, worded as `execute` words its run in a log
    (kafka_rebalance.report.run_lines: a move started, copied at what rate against the cap,
    the gate's verdict when it changes, done), without copy progress: the auto use case's
    output (`kafka_rebalance.usecases.auto.AutoOutput`)."""

    def __init__(self, zone: tzinfo, cap_bytes_per_sec: float) -> None:
        self.zone = zone
        self.run = RunLines(cap_bytes_per_sec, progress_lines=False)

    def say(self, message: str) -> None:
        stamp = datetime.now(self.zone).strftime("%Y-%m-%d %H:%M:%S")
        console.print(f"{stamp} {message}", highlight=False, soft_wrap=True, markup=False)

    def report(self, event: Event) -> None:
        for line in self.run.lines(event, time.time()):
            self.say(line)

    def note(self, message: str) -> None:
        note(message)


def _settings(windows: list[str], zone: tzinfo, max_mbps: float, tolerance: float,
              efficiency: float, time_limit: float, cooldown: float, quota_window: float | None,
              gate_timeout: float | None, poll_seconds: float, dry_run: bool,
              min_improvement: float) -> AutoSettings:
    from kafka_rebalance.autobalance.cycle import Pace
    from kafka_rebalance.autobalance.orchestrator import AutoSettings
    from kafka_rebalance.autobalance.windows import parse_schedule
    from kafka_rebalance.usecases.run_settings import config_from_flags
    from planner.goals import Budget, Goals

    Budget(time_limit_s=time_limit)  # --time-limit checked now, not at the first plan
    schedule = parse_schedule(windows, zone)
    config = config_from_flags(max_mbps=max_mbps, cooldown=cooldown, gate_timeout=gate_timeout,
                               poll_seconds=poll_seconds, quota_window=quota_window)
    return AutoSettings(schedule, Pace(int(max_mbps * MB), efficiency), Goals(tolerance),
                        config, time_limit, dry_run, min_improvement)


def _with_queries(settings: AutoSettings, rate_window: str,
                  queries_file: Path | None) -> tuple[AutoSettings, bool]:
    """The gate's queries from --queries / --rate-window, and whether the rate window is to
    come from the scrape interval ('auto', which the use case asks Prometheus for)."""
    from kafka_rebalance.usecases.run_settings import read_queries

    queries, derive = read_queries(rate_window, queries_file)
    return replace(settings, executor=replace(settings.executor, queries=queries)), derive


WindowOpt = Annotated[list[str], typer.Option(
    "--window", help="A maintenance window, e.g. 'Mon-Fri 01:00-05:00', 'daily 22:00-02:00' "
    "(crosses midnight), 'Sat,Sun 00:00-24:00'. Repeat it or separate windows with ';'.")]


def auto(
    bootstrap: Bootstrap,
    prometheus: Annotated[str, typer.Option(
        "--prometheus", help="Prometheus URL: partition rates for the plan, the gates' "
        "network readings for the run.")],
    max_mbps: Annotated[float, typer.Option(
        help="Replication throttle per broker in MB/s (10^6 bytes/s); also sizes each plan.")],
    window: WindowOpt,
    timezone: Annotated[str | None, typer.Option(
        help="IANA timezone of the windows (e.g. Europe/Berlin); default: this machine's.")
    ] = None,
    capacities: Annotated[Path | None, typer.Option(
        help="Capacities YAML (heterogeneous brokers); without it brokers count as equal.")
    ] = None,
    tolerance: Annotated[float, typer.Option(
        help="Balance goal: a rebalance is due when a broker's utilization of a resource is "
        "outside the average +/- this fraction.")] = 0.10,
    leader_balance: Annotated[float | None, typer.Option(
        help="Also keep leaders level: a rebalance is due when a broker leads more or fewer "
        "partitions (or produce bytes) than its fair share +/- this fraction, and the plan "
        "reorders replicas to fix it, copying nothing for it (plan --leader-balance). Off by "
        "default.")] = None,
    request_balance: Annotated[float | None, typer.Option(
        help="Also keep requests level: a rebalance is due when a broker serves more or fewer "
        "produce and fetch requests than its fair share +/- this fraction (plan "
        "--request-balance). Off by default.")] = None,
    state_dir: Annotated[Path, typer.Option(
        help="Where plans and journals are kept (and the lock against a second auto process).")
    ] = Path(".rebalance-auto"),
    once: Annotated[bool, typer.Option(
        "--once", help="Run one cycle and exit (for cron or a systemd timer).")] = False,
    interval: Annotated[float, typer.Option(
        help="Minutes between checks inside a window (without --once).")] = 15.0,
    dry_run: Annotated[bool, typer.Option(
        help="Say what the cycle would do (plan included); change nothing, write nothing.")
    ] = False,
    command_config: CommandConfig = None,
    min_improvement: Annotated[float, typer.Option(
        help="Execute a new plan only if it fixes a hard-goal violation, brings a resource "
        "within the tolerance, or moves the worst broker of an unbalanced resource at least "
        "this fraction of the average closer to it (0.02: 2 points); otherwise skip it.")
    ] = 0.02,
    efficiency: Annotated[float, typer.Option(
        help="Share of a window's time spent copying at the cap (the rest goes to gates, "
        "cooldowns, leader elections): plan bytes = time left x cap x this.")] = 0.5,
    time_limit: Annotated[float, typer.Option(help="Planner time limit, seconds.")] = 60.0,
    drain_dead_after: Annotated[float, typer.Option(
        help="Self-healing: drain a broker that holds replicas once it has been offline this "
        "many seconds (a shorter outage may be a restart). With more brokers offline than a "
        "partition's replicas, nothing is planned and the cycle says which partitions are "
        "lost.")] = DEFAULT_GRACE_SECONDS,
    cooldown: Cooldown = 0.0,
    quota_window: QuotaWindow = None,
    gate_timeout: Annotated[float | None, typer.Option(
        help="Stop the run (resumed next cycle) when a gate stays closed this many seconds.")
    ] = DEFAULT_GATE_TIMEOUT_SECONDS,
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
) -> None:
    """Scheduled auto-balancing: detect imbalance, plan and execute inside maintenance windows.

    Outside every window a cycle waits (a move left in flight by a crash is finished; nothing
    new starts).

    Inside a window it resumes the last unfinished run (cancelled and planned afresh if the
    cluster changed under it); otherwise it reads the cluster and, when a resource is outside
    the tolerance band, a rack rule is broken or replicas sit on a broker offline longer than
    --drain-dead-after, plans at most
    time left x --max-mbps x --efficiency bytes into --state-dir and executes the plan with
    the window's end as its deadline: no move starts that could not finish in time.

    A plan that would not fix a hard-goal violation, reach the tolerance or improve the worst
    broker by --min-improvement is not executed ("nothing worth doing", with the numbers).

    A resumed run keeps the settings it was started with (--cooldown, --quota-window,
    --gate-timeout, the gate's queries, the SLO guard) except the cap: this process's
    --max-mbps applies, as with `rebalance resume --max-mbps`, and the log line says what
    changed; a move left in flight keeps its journaled throttle until it is done.

    Throttles are always restored; Ctrl-C or SIGTERM cancels a run in flight cleanly. A second
    `rebalance auto` on the same --state-dir is refused.
    """
    from kafka_rebalance.autobalance.statedir import StateDir

    zone = resolve_zone(timezone)
    settings = _settings(window, zone, max_mbps, tolerance, efficiency, time_limit, cooldown,
                         quota_window, gate_timeout, poll_seconds, dry_run, min_improvement)
    guard = slo_from_flags(guard=slo_guard, produce_p99_ms=slo_produce_p99_ms,
                           fetch_p99_ms=slo_fetch_p99_ms, flush_p95_ms=slo_flush_p95_ms,
                           under_replicated=slo_under_replicated, lag=slo_lag,
                           interval=slo_interval, baseline=slo_baseline)
    settings = replace(settings, executor=replace(settings.executor, slo=guard),
                       dead_broker_grace_seconds=drain_dead_after,
                       goals=replace(settings.goals, leader_balance=leader_balance,
                                     request_balance=request_balance))
    loop = LoopSettings(once=once, interval_minutes=interval)
    if capacities is not None:  # checked now, not at the first cycle inside a window
        from topology.capacities import read_capacities

        read_capacities(capacities)
    settings, derive_window = _with_queries(settings, rate_window, queries_file)
    lines = Lines(zone, max_mbps * MB)
    lines.say(f"windows: {settings.schedule.describe()}; state: {visible(str(state_dir))}"
              + ("; dry run" if dry_run else ""))
    with sigterm_as_ctrl_c():  # systemd stops a service with SIGTERM: a clean cancel
        result = run_auto(settings, loop=loop,
                          cluster=ClusterAccess(bootstrap=bootstrap, prometheus=prometheus,
                                                command_config=command_config,
                                                capacities=capacities),
                          state=StateDir(state_dir), output=lines,
                          derive_rate_window=derive_window)
    _conclude(result)


def _conclude(result: CycleResult) -> None:
    """A run with failed moves (or throttles left) exits 6; one cancelled as asked (SIGTERM,
    Ctrl-C) with every throttle restored exits 8, as `execute` does."""
    from kafka_rebalance.commands.execute_run import CANCELLED_EXIT_CODE

    if result.cancelled_cleanly:
        raise typer.Exit(CANCELLED_EXIT_CODE)
    if result.failed:
        raise ExecutionError(f"the run ended with failed or cancelled moves; see "
                             f"`rebalance status --journal {result.journal_path}`")
