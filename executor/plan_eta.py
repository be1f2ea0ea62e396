"""How long a plan takes to run, known before it starts: the review's ETA.

The executor's defaults: one move at a time, each copying its bytes at the rate, and after a
move that copied data, Kafka's replication quota window (DEFAULT_QUOTA_WINDOW_SECONDS) before
the next starts. The gate can add more when the cluster is slow to settle. (A running run's
ETA comes from its journal: `executor.timeline`; with concurrency: `report.schedule`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS

if TYPE_CHECKING:
    from planner.planfile import PlanFile


def finish_times(plan: PlanFile, rate_bytes_per_sec: float) -> list[float]:
    """Seconds from the start of the run until each move is done: one move at a time at the
    rate, with execute's default quota-window wait after each move that copies data."""
    elapsed, times = 0.0, []
    for index, move in enumerate(plan.moves):
        if index and plan.moves[index - 1].bytes_moved:
            elapsed += DEFAULT_QUOTA_WINDOW_SECONDS
        elapsed += move.bytes_moved / rate_bytes_per_sec
        times.append(elapsed)
    return times


def eta_seconds(plan: PlanFile, rate_bytes_per_sec: float) -> tuple[float, float]:
    """(copying, waiting) seconds of the whole plan: copy time at the rate plus the
    quota-window waits between moves (execute's defaults, one move at a time)."""
    copying = plan.bytes_moved / rate_bytes_per_sec
    waits = sum(1 for m in plan.moves[:-1] if m.bytes_moved) * DEFAULT_QUOTA_WINDOW_SECONDS
    return copying, waits
