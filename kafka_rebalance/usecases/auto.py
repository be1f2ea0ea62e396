"""Scheduled auto-balancing against the real cluster: one cycle, and the loop of cycles.

`run_auto_cycle` connects one cycle (`kafka_rebalance.autobalance.orchestrator.run_cycle`) to the
real ports, the live topology, the run lease and the planner
(`kafka_rebalance.usecases.plan.build_plan`, moves smallest first). `auto_loop` runs cycles once
(for cron or a systemd timer) or forever, sleeping until the next window and re-checking every
`interval_minutes` inside one; a failed cycle is told and retried after the interval, except a
refused input. `run_auto` holds the state directory's lock around the loop (a dry run reads only:
one cycle, no lock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Protocol

from kafka_rebalance.core.errors import InputError, RebalanceError
from kafka_rebalance.usecases.cluster import ClusterAccess

if TYPE_CHECKING:
    from executor.config import Event
    from kafka_rebalance.autobalance.orchestrator import AutoSettings, CycleResult
    from kafka_rebalance.autobalance.statedir import StateDir
    from kafka_rebalance.core.ports import Clock
    from planner.goals import Budget, Goals
    from planner.planfile import PlanFile
    from topology.model import Topology


MAX_INTERVAL_MINUTES = 7 * 24 * 60.0  # checks at least weekly; more is a unit slip
"""The longest --interval: a window checked less than weekly is a window missed."""


@dataclass(frozen=True, kw_only=True)
class LoopSettings:
    """How the cycles repeat: one cycle (`once`), or a check every `interval_minutes` inside
    a window."""

    once: bool = False
    interval_minutes: float = 15.0

    def __post_init__(self) -> None:
        if not 0 < self.interval_minutes <= MAX_INTERVAL_MINUTES:
            raise InputError(f"--interval must be minutes between 0 and a week "
                             f"({MAX_INTERVAL_MINUTES:g}), got {self.interval_minutes}")


class AutoOutput(Protocol):
    """Where a cycle tells what it does."""

    def say(self, message: str) -> None:
        """One line of the cycle's account (decisions, plans, runs)."""

    def report(self, event: Event) -> None:
        """One event of a run the cycle drives."""

    def note(self, message: str) -> None:
        """Something that went wrong beside the run (a lease that could not be released)."""


def plan_for_cycle(topology: Topology, goals: Goals, budget: Budget) -> PlanFile:
    """A cycle's plan: solved, validated and ordered smallest first, made now."""
    from kafka_rebalance.usecases.plan import PlanSettings, build_plan

    return build_plan(topology, PlanSettings(goals=goals, budget=budget))


def run_auto_cycle(settings: AutoSettings, *, cluster: ClusterAccess, state: StateDir,
                   output: AutoOutput) -> CycleResult:
    """One cycle against the real cluster: decide, then plan and execute, resume, or wait."""
    from kafka_rebalance.autobalance.orchestrator import Edge, run_cycle
    from kafka_rebalance.usecases.cluster import cluster_lease, live_topology, real_ports

    with real_ports(cluster.bootstrap, cluster.prometheus, cluster.command_config) as ports:
        edge = Edge(ports, lambda: live_topology(ports, cluster.bootstrap, cluster.capacities),
                    plan_for_cycle, state, output.say, output.report,
                    lambda run_id, journal: cluster_lease(cluster.bootstrap,
                                                          cluster.command_config, run_id,
                                                          journal, None, output.note))
        return run_cycle(settings, edge)


def auto_loop(cycle: Callable[[], CycleResult], *, loop: LoopSettings, zone: tzinfo,
              say: Callable[[str], None], clock: Clock) -> CycleResult:
    """Run cycles: with `once`, one, and its result; otherwise until interrupted, sleeping
    until the cycle's wake time (the next window) or for the interval. A failed cycle is told
    and retried after the interval; a refused input (InputError) ends the loop."""
    while True:
        try:
            result = cycle()
            if loop.once:
                return result
            wake = result.decision.wake_at
        except RebalanceError as exc:
            if loop.once or isinstance(exc, InputError):
                raise
            say(f"cycle failed: {exc}")
            wake = None
        _sleep_until(wake, loop.interval_minutes, zone, say, clock)


def _sleep_until(wake: datetime | None, interval_minutes: float, zone: tzinfo,
                 say: Callable[[str], None], clock: Clock) -> None:
    now = datetime.fromtimestamp(clock.now(), UTC)
    until = wake if wake is not None else now + timedelta(minutes=interval_minutes)
    say(f"next check at {until.astimezone(zone):%Y-%m-%d %H:%M:%S %Z}")
    clock.sleep((until - now).total_seconds())


def run_auto(settings: AutoSettings, *, loop: LoopSettings, cluster: ClusterAccess,
             state: StateDir, output: AutoOutput, clock: Clock | None = None,
             derive_rate_window: bool = False) -> CycleResult:
    """`rebalance auto`: the loop of cycles under the state directory's lock (a second auto
    process on it is refused); a dry run is one cycle that reads only (no lock, nothing
    written). Returns the last cycle's result (with `once` or a dry run).
    `derive_rate_window` takes the gates' rate window from the Prometheus targets' scrape
    interval (`--rate-window auto`), asked once before the first cycle."""
    from dataclasses import replace

    from executor.clock import SystemClock
    from kafka_rebalance.autobalance.statedir import state_lock
    from kafka_rebalance.usecases.cluster import with_scrape_window

    if derive_rate_window:
        queries = with_scrape_window(settings.executor.queries, cluster.prometheus)
        settings = replace(settings, executor=replace(settings.executor, queries=queries))

    def cycle() -> CycleResult:
        return run_auto_cycle(settings, cluster=cluster, state=state, output=output)

    if settings.dry_run:
        return cycle()
    with state_lock(state):
        return auto_loop(cycle, loop=loop, zone=settings.schedule.zone, say=output.say,
                         clock=clock or SystemClock())
