"""One auto-balancing cycle's decision: sleep, finish or resume the last run, plan a new one,
or nothing to do. Pure: the clock reading, the windows, the journal's state and the imbalance
verdict come in as values; the verdict is asked for only when it matters (reading the cluster
outside a window is wasted work).

The byte budget keeps a new plan inside the window: the executor copies one partition at a
time at the throttle cap, but between copies it waits for Kafka's replication quota window, the
cooldown and the gate (network back to baseline) and elects leaders, and replication rarely runs
at the full cap. So only part of the time left is copying time:
    max_bytes = seconds left in the window x cap (bytes/s) x efficiency.
The default efficiency of 0.5 assumes half of the window is spent copying; the executor's
finish_by (the window's end) is the hard guard, this only sizes the plan so that it usually
completes within one window. Raise it for plans of few large partitions, lower it for many
small ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from kafka_rebalance.autobalance.imbalance import Verdict
from kafka_rebalance.autobalance.windows import Schedule, next_start, window_at
from kafka_rebalance.core.errors import InputError

DEFAULT_EFFICIENCY = 0.5
# With less of the window left than this, a new run is not planned (the plan would take part of
# it and hardly anything could move); a run is still resumed, as the executor stops in time.
DEFAULT_MIN_WINDOW_SECONDS = 120.0


class RunLeft(StrEnum):
    """What the state directory's latest run left."""

    NONE = "none"  # no run, or it ended
    PENDING = "pending"  # unfinished, but no move in flight (e.g. stopped at a window's end)
    IN_FLIGHT = "in_flight"  # a move was in flight when its process ended


class Action(StrEnum):
    SLEEP = "sleep"  # outside every window: wait until `wake_at`
    FINISH_IN_FLIGHT = "finish_in_flight"  # outside a window: finish the move in flight only
    RESUME = "resume"  # continue the unfinished run until `finish_by`
    REBALANCE = "rebalance"  # plan at most `max_bytes` and execute it until `finish_by`
    BALANCED = "balanced"  # inside a window, nothing to do


@dataclass(frozen=True, slots=True)
class Decision:
    """What this cycle does and why; times are UTC."""

    action: Action
    reason: str
    wake_at: datetime | None = None
    finish_by: datetime | None = None
    max_bytes: int | None = None
    verdict: Verdict | None = None


@dataclass(frozen=True, slots=True)
class Pace:
    """How fast a run copies and how much of a window a plan may fill."""

    cap_bytes_per_sec: int
    efficiency: float = DEFAULT_EFFICIENCY
    min_window_seconds: float = DEFAULT_MIN_WINDOW_SECONDS

    def __post_init__(self) -> None:
        if self.cap_bytes_per_sec <= 0:
            raise InputError(f"--max-mbps must be positive, got {self.cap_bytes_per_sec} B/s")
        if not 0 < self.efficiency <= 1:
            raise InputError(f"--efficiency must be in (0, 1], got {self.efficiency}")
        if self.min_window_seconds < 0:
            raise InputError("the minimum window time must be >= 0 seconds")

    def byte_budget(self, seconds_left: float) -> int:
        """Bytes a plan may move in `seconds_left` of window."""
        return int(max(0.0, seconds_left) * self.cap_bytes_per_sec * self.efficiency)


def decide_cycle(now: datetime, schedule: Schedule, run_left: RunLeft,
                 verdict: Callable[[], Verdict], pace: Pace) -> Decision:
    """The cycle's action at `now` (timezone-aware)."""
    window = window_at(schedule, now)
    if window is None:
        if run_left is RunLeft.IN_FLIGHT:
            return Decision(Action.FINISH_IN_FLIGHT, "outside the windows with a move in "
                            "flight: finish it (no new move starts), then wait",
                            finish_by=now)
        wake = next_start(schedule, now)
        return Decision(Action.SLEEP, f"outside the windows; the next opens at "
                        f"{wake.astimezone(schedule.zone):%a %Y-%m-%d %H:%M %Z}", wake_at=wake)
    if run_left is not RunLeft.NONE:
        return Decision(Action.RESUME, "the last run is unfinished: resume it until the "
                        "window closes", finish_by=window.end)
    seconds_left = (window.end - now).total_seconds()
    if seconds_left < pace.min_window_seconds:
        wake = next_start(schedule, window.end)
        return Decision(Action.SLEEP, f"the window closes in {seconds_left:.0f} s, too late to "
                        "plan a run", wake_at=wake)
    found = verdict()
    if not found.due:
        return Decision(Action.BALANCED, found.summary(), verdict=found)
    budget = pace.byte_budget(seconds_left)
    return Decision(Action.REBALANCE, found.summary(), finish_by=window.end,
                    max_bytes=budget, verdict=found)
