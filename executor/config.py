"""The executor's settings (one validated value) and the ports it runs against."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from executor.gates import GatePolicy
from executor.readings import GateQueries
from topology.errors import InputError
from topology.model import Capacity
from topology.ports import Clock, KafkaAdmin, MetricsSource

# Kafka's default replication quota window: replication.quota.window.num (11) x
# replication.quota.window.size.seconds (1).
DEFAULT_QUOTA_WINDOW_SECONDS = 11.0


@dataclass(frozen=True)
class ExecutorConfig:
    """How a run proceeds. Rates are bytes per second.

    stall_intervals: a move that shows no progress (destination bytes, ISR) for this many polls
    is cancelled; concurrency: moves in flight at once, never two on the same broker;
    gate_timeout_seconds: a gate still closed after this long (past the cooldown) stops the run
    (the move itself is done; `resume` continues).
    """

    max_bytes_per_sec: int
    concurrency: int = 1
    cooldown_seconds: float = 0.0
    poll_seconds: float = 1.0
    stall_intervals: int = 30
    elect_leaders: bool = True
    adaptive: bool = False
    adaptive_floor_bytes_per_sec: int = 1_000_000
    adaptive_every_polls: int = 10  # re-derive adaptive rates this often during a copy
    adaptive_change: float = 0.10  # ... and re-set them when one moves by more than this
    capacities: Mapping[int, Capacity] = field(default_factory=dict)
    gate: GatePolicy = field(default_factory=GatePolicy)
    queries: GateQueries = field(default_factory=GateQueries)
    allow_under_replicated: bool = False
    # Start moves onto brokers whose follower quota a topic's follower list keeps warm (see
    # preflight.warm_follower_quotas): their first seconds may copy far above the cap.
    allow_quota_burst: bool = False
    gate_timeout_seconds: float | None = None  # None: wait for the gate as long as it takes
    # Kafka's replication quota window (replication.quota.window.num x .size.seconds, 11 x 1 s
    # by default). Its rate is bytes in the window over the time since its oldest sample: a
    # move starting while the previous move's last samples linger is measured over the whole
    # window and copies many seconds' worth at full speed. Waiting this long after a move
    # (overlapping the cooldown) lets the window empty, so the next throttle holds at once.
    quota_window_seconds: float = 0.0
    # The gate protects the next move, so the last move's is skipped unless this is set (for
    # example when another run follows at once and should start from a settled cluster).
    final_gate: bool = False
    # Clock time (seconds, like Clock.now) by which moves should be done, for runs inside a
    # maintenance window: a move whose copy at the cap would end later is not started, and the
    # run stops there (resumable). Moves in flight always finish. None: no limit.
    finish_by: float | None = None

    def __post_init__(self) -> None:
        if self.max_bytes_per_sec <= 0:
            raise InputError(f"--max-mbps must be positive, got {self.max_bytes_per_sec} B/s")
        if self.concurrency < 1:
            raise InputError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.cooldown_seconds < 0 or self.poll_seconds <= 0:
            raise InputError("--cooldown must be >= 0 and the poll interval > 0")
        if self.stall_intervals < 1:
            raise InputError(f"stall intervals must be at least 1, got {self.stall_intervals}")
        if self.gate_timeout_seconds is not None and self.gate_timeout_seconds <= 0:
            raise InputError("the gate timeout must be positive (or unset to wait forever)")
        if self.adaptive and not 0 < self.adaptive_floor_bytes_per_sec <= self.max_bytes_per_sec:
            raise InputError("the adaptive floor must be positive and at most --max-mbps")
        if self.quota_window_seconds < 0:
            raise InputError("the quota window must be >= 0 seconds")
        if self.adaptive_every_polls < 1 or self.adaptive_change < 0:
            raise InputError("adaptive re-evaluation needs at least 1 poll and a change >= 0")

    @property
    def settle_seconds(self) -> float:
        """How long after a move before its gate is checked: the cooldown or the quota
        window, whichever is longer (they overlap)."""
        return max(self.cooldown_seconds, self.quota_window_seconds)

    def summary(self) -> dict[str, Any]:
        """The settings worth keeping in the journal header."""
        return {"max_bytes_per_sec": self.max_bytes_per_sec, "concurrency": self.concurrency,
                "cooldown_seconds": self.cooldown_seconds, "adaptive": self.adaptive,
                "elect_leaders": self.elect_leaders, "gate_margin": self.gate.margin,
                "gate_floor_bytes_per_sec": self.gate.floor_bytes_per_sec,
                "gate_consecutive": self.gate.consecutive,
                "gate_timeout_seconds": self.gate_timeout_seconds,
                "produce_p99_max_ms": self.gate.produce_p99_max_ms,
                "quota_window_seconds": self.quota_window_seconds,
                "final_gate": self.final_gate,
                "queries": self.queries.to_dict()}


@dataclass(frozen=True)
class Ports:
    """The outside world, behind protocols."""

    admin: KafkaAdmin
    metrics: MetricsSource
    clock: Clock


class EventKind(StrEnum):
    STATE = "state"  # a move changed state
    PROGRESS = "progress"  # bytes copied so far for a move in flight
    GATE = "gate"  # a gate decision (wait / hold / open)
    HOLD = "hold"  # a move could not start (metrics unavailable)
    NOTE = "note"  # anything else worth telling the operator


@dataclass(frozen=True, slots=True)
class Event:
    """Something the progress display may show."""

    kind: EventKind
    message: str
    move: str = ""
    index: int = 0  # 1-based position of the move in the plan
    total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    state: str = ""  # STATE: the move's new state; GATE: the verdict (open / wait / hold)


Reporter = Callable[[Event], None]


def ignore_events(event: Event) -> None:
    """The default reporter."""
