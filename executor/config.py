"""The executor's settings (one validated value, with its round trip to the journal header)
and the ports it runs against."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from executor.gates import GatePolicy
from executor.readings import GateQueries
from executor.slo import SloPolicy
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.core.ports import Clock, KafkaAdmin, MetricsSource
from topology.model import Capacity

# Kafka's default replication quota window: replication.quota.window.num (11) x
# replication.quota.window.size.seconds (1).
DEFAULT_QUOTA_WINDOW_SECONDS = 11.0
# A gate closed this long after a move (past the cooldown) stops the run, resumable: a cluster
# that does not settle in 15 minutes needs an operator's look, not a run that waits forever.
DEFAULT_GATE_TIMEOUT_SECONDS = 900.0
MB = 1_000_000  # bytes in a megabyte, as --max-mbps counts
AUTO: Literal["auto"] = "auto"
# Moves in flight at once: a number, or "auto" for as many as keep each broker sending for at
# most one move and receiving for at most one (executor.flows).
Concurrency = int | Literal["auto"]


def parse_concurrency(value: object) -> Concurrency:
    """`auto` or a whole number of at least 1 (a flag, a journal value)."""
    if value == AUTO:
        return AUTO
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise InputError(f"--concurrency must be a whole number of at least 1, or auto; got "
                         f"{str(value)[:40]!r}")
    return int(text)


@dataclass(frozen=True, slots=True)
class RunHeader:
    """What the views of a run (its status, ETA, timeline and report) read of the settings its
    journal header keeps (`ExecutorConfig.to_journal`), typed once. Lenient: a value an older
    journal lacks, or an edited one spoils, reads as unknown or as its default, since it only
    times or labels a view; continuing the run reads the header strictly
    (`ExecutorConfig.from_journal`)."""

    cap_bytes_per_sec: float | None = None  # under 1 B/s (never written by a run): unknown
    cooldown_seconds: float = 0.0
    concurrency: Concurrency = 1
    quota_window_seconds: float = DEFAULT_QUOTA_WINDOW_SECONDS
    adaptive: bool = False
    queries: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> RunHeader:
        try:
            concurrency = parse_concurrency(settings.get("concurrency", 1))
        except InputError:
            concurrency = 1
        queries = settings.get("queries")
        window = _positive(settings.get("quota_window_seconds"), allow_zero=True)
        cap = _positive(settings.get("max_bytes_per_sec"))
        return cls(cap_bytes_per_sec=cap if cap is not None and cap >= 1 else None,
                   cooldown_seconds=_positive(settings.get("cooldown_seconds")) or 0.0,
                   concurrency=concurrency,
                   quota_window_seconds=(DEFAULT_QUOTA_WINDOW_SECONDS if window is None
                                         else window),
                   adaptive=settings.get("adaptive") is True,
                   queries=queries if isinstance(queries, dict) else {})


def _positive(value: object, allow_zero: bool = False) -> float | None:
    """A finite number above zero (or zero, when allowed) as a float; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        return None
    return number


def adaptive_floor_for(max_bytes_per_sec: int) -> int:
    """The lowest rate --adaptive sets: 1 MB/s, or the cap when that is lower."""
    return min(MB, max_bytes_per_sec)


@dataclass(frozen=True, kw_only=True)
class RunOverrides:
    """What a resumed or cancelled run takes from the process that continues it rather than
    from its journal: a new cap (None keeps the run's own), adaptive rates on or off (None: as
    the run was started), and the settings of one process that a journal never keeps (the
    poll interval, the under-replication and quota-burst permissions, the deadline).
    """

    max_bytes_per_sec: int | None = None
    adaptive: bool | None = None
    allow_under_replicated: bool = False
    allow_quota_burst: bool = False
    finish_by: float | None = None
    poll_seconds: float = 1.0

    def __post_init__(self) -> None:
        if self.max_bytes_per_sec is not None and self.max_bytes_per_sec <= 0:
            raise InputError(f"--max-mbps must be positive, got {self.max_bytes_per_sec} B/s")


@dataclass(frozen=True, kw_only=True)
class ExecutorConfig:
    """How a run proceeds. Rates are bytes per second.

    stall_intervals: a move that shows no progress (destination bytes, ISR) for this many polls
    is cancelled; concurrency: moves in flight at once (or "auto"), each broker sending for at
    most one and receiving for at most one;
    gate_timeout_seconds: a gate still closed after this long (past the cooldown) stops the run
    (the move itself is done; `resume` continues).
    """

    max_bytes_per_sec: int
    concurrency: Concurrency = 1
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
    gate_timeout_seconds: float | None = DEFAULT_GATE_TIMEOUT_SECONDS  # None: no limit
    # Kafka's replication quota window (replication.quota.window.num x .size.seconds, 11 x 1 s
    # by default). Kafka measures a quota over the samples of that window, so a copy through a
    # broker whose window still holds a finished copy's samples may run far above the cap; a
    # move into such a broker waits for its window to pass, unless it takes the broker over
    # from a copy ending now (see executor.flows). 0: never wait. None: the window the brokers
    # describe, read when the run starts (executor.flows.choose_quota_window, which also
    # lengthens a shorter one asked for).
    quota_window_seconds: float | None = 0.0
    # The gate protects the next move, so the last move's is skipped unless this is set (for
    # example when another run follows at once and should start from a settled cluster).
    final_gate: bool = False
    # Clock time (seconds, like Clock.now) by which moves should be done, for runs inside a
    # maintenance window: a move whose copy at the cap would end later is not started, and the
    # run stops there (resumable). Moves in flight always finish. None: no limit.
    finish_by: float | None = None
    # The SLO guard during copies (executor.slo): lowers a copy's rates while its brokers'
    # clients suffer, raises them back when they recover.
    slo: SloPolicy = field(default_factory=SloPolicy)
    # Brokers the plan drains, to cordon (KIP-1066) before the first move so that topics made
    # during the drain stay off them (execute --cordon-drained). Used once, when a run starts:
    # the journal's cordon record then says what to restore on cancel.
    cordon_brokers: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.max_bytes_per_sec <= 0:
            raise InputError(f"--max-mbps must be positive, got {self.max_bytes_per_sec} B/s")
        parse_concurrency(self.concurrency)
        if self.cooldown_seconds < 0 or self.poll_seconds <= 0:
            raise InputError("--cooldown must be >= 0 and the poll interval > 0")
        if self.stall_intervals < 1:
            raise InputError(f"stall intervals must be at least 1, got {self.stall_intervals}")
        if self.gate_timeout_seconds is not None and self.gate_timeout_seconds <= 0:
            raise InputError("the gate timeout must be positive (or unset to wait forever)")
        if self.adaptive and not 0 < self.adaptive_floor_bytes_per_sec <= self.max_bytes_per_sec:
            raise InputError("the adaptive floor must be positive and at most --max-mbps")
        if self.quota_window_seconds is not None and not self.quota_window_seconds >= 0:
            raise InputError("the quota window must be >= 0 seconds")
        if self.adaptive_every_polls < 1 or self.adaptive_change < 0:
            raise InputError("adaptive re-evaluation needs at least 1 poll and a change >= 0")

    @property
    def quota_window(self) -> float:
        """The quota window moves wait on: as chosen when the run started or resumed (see
        `quota_window_seconds`); Kafka's default where nothing chose one (a cancel of a run
        whose journal header lost the value)."""
        if self.quota_window_seconds is None:
            return DEFAULT_QUOTA_WINDOW_SECONDS
        return self.quota_window_seconds

    @property
    def slots(self) -> int:
        """How many moves may be in flight; with "auto", as many as the brokers allow."""
        return self.concurrency if isinstance(self.concurrency, int) else 1 << 30

    def to_journal(self) -> dict[str, Any]:
        """The run's own settings, for the journal header: everything but the capacities (an
        adaptive run reads them again from --capacities against the live brokers) and the
        RunOverrides fields, which belong to the process running it."""
        return {"max_bytes_per_sec": self.max_bytes_per_sec, "concurrency": self.concurrency,
                "cooldown_seconds": self.cooldown_seconds, "adaptive": self.adaptive,
                "elect_leaders": self.elect_leaders, "gate_margin": self.gate.margin,
                "gate_floor_bytes_per_sec": self.gate.floor_bytes_per_sec,
                "gate_consecutive": self.gate.consecutive,
                "gate_timeout_seconds": self.gate_timeout_seconds,
                "produce_p99_max_ms": self.gate.produce_p99_max_ms,
                "quota_window_seconds": self.quota_window_seconds,
                "final_gate": self.final_gate,
                "queries": self.queries.to_dict(),
                "stall_intervals": self.stall_intervals,
                "adaptive_floor_bytes_per_sec": self.adaptive_floor_bytes_per_sec,
                "adaptive_every_polls": self.adaptive_every_polls,
                "adaptive_change": self.adaptive_change, "slo": self.slo.to_dict()}

    @classmethod
    def from_journal(cls, settings: Mapping[str, Any], *,
                     overrides: RunOverrides) -> ExecutorConfig:
        """The settings a run continues with: its own, from the journal header (`to_journal`),
        except what `overrides` gives. This is the one rule for `rebalance resume`, `cancel`,
        `clear-throttles` and a cycle of `rebalance auto` that resumes a run:

        - the cap is the run's own unless a new one is given (`resume --max-mbps`; `auto`
          always gives its --max-mbps); with a new cap the adaptive floor is derived from it
          again (`adaptive_floor_for`);
        - adaptive rates are as the run was started unless switched on or off (`resume
          --adaptive/--no-adaptive`; `auto`, `cancel` and `clear-throttles` never use them);
        - concurrency, cooldown, quota window, leader election, the gate (margin, floor,
          samples, p99 limit, timeout, final gate, PromQL queries), the SLO guard and the
          stall and adaptive tuning are always the run's own; a key a journal lacks (one
          written by an older version) takes the default;
        - the poll interval, --allow-under-replicated, --allow-quota-burst and --finish-by are
          the continuing process's own, never the journal's.

        A header without a cap and no new one is an InputError; a malformed value an
        ExecutionError naming the journal as corrupt or edited.
        """
        try:
            return cls._from_journal(settings, overrides)
        except (TypeError, ValueError) as exc:
            raise ExecutionError(f"journal: the run header's settings are malformed ({exc}); "
                                 "the journal is corrupt or edited") from None

    @classmethod
    def _from_journal(cls, s: Mapping[str, Any], overrides: RunOverrides) -> ExecutorConfig:
        own_cap = int(float(s.get("max_bytes_per_sec", 0)))
        cap = overrides.max_bytes_per_sec if overrides.max_bytes_per_sec is not None else own_cap
        if cap <= 0:
            raise InputError("the journal records no throttle cap: pass --max-mbps")
        base, base_gate = cls(max_bytes_per_sec=cap), GatePolicy()  # for keys a journal lacks
        floor = s.get("adaptive_floor_bytes_per_sec")
        if floor is None or overrides.max_bytes_per_sec is not None:
            floor = adaptive_floor_for(cap)
        gate = GatePolicy(float(s.get("gate_margin", base_gate.margin)),
                          float(s.get("gate_floor_bytes_per_sec", base_gate.floor_bytes_per_sec)),
                          int(s.get("gate_consecutive", base_gate.consecutive)),
                          _optional_float(s.get("produce_p99_max_ms")))
        adaptive = (bool(s.get("adaptive", base.adaptive)) if overrides.adaptive is None
                    else overrides.adaptive)
        return cls(
            max_bytes_per_sec=cap,
            concurrency=_journal_concurrency(s.get("concurrency", base.concurrency)),
            cooldown_seconds=float(s.get("cooldown_seconds", base.cooldown_seconds)),
            poll_seconds=overrides.poll_seconds,
            stall_intervals=int(s.get("stall_intervals", base.stall_intervals)),
            elect_leaders=bool(s.get("elect_leaders", base.elect_leaders)), adaptive=adaptive,
            adaptive_floor_bytes_per_sec=int(floor),
            adaptive_every_polls=int(s.get("adaptive_every_polls", base.adaptive_every_polls)),
            adaptive_change=float(s.get("adaptive_change", base.adaptive_change)),
            gate=gate, queries=_journal_queries(s.get("queries")),
            allow_under_replicated=overrides.allow_under_replicated,
            allow_quota_burst=overrides.allow_quota_burst,
            gate_timeout_seconds=_optional_float(s.get("gate_timeout_seconds",
                                                       DEFAULT_GATE_TIMEOUT_SECONDS)),
            quota_window_seconds=_optional_float(s.get("quota_window_seconds",
                                                       base.quota_window_seconds)),
            final_gate=bool(s.get("final_gate", base.final_gate)), finish_by=overrides.finish_by,
            slo=_journal_slo(s.get("slo")))


def _journal_concurrency(stored: Any) -> Concurrency:
    if stored == AUTO or (isinstance(stored, int) and not isinstance(stored, bool)
                          and stored >= 1):
        return stored  # type: ignore[no-any-return]
    raise ValueError(f"concurrency {str(stored)[:40]!r} is neither a whole number nor auto")


def _journal_queries(stored: Any) -> GateQueries:
    if not isinstance(stored, dict):
        return GateQueries()  # a journal from before the queries were kept
    return GateQueries.from_dict(stored, "the journal's gate queries")


def _journal_slo(stored: Any) -> SloPolicy:
    if stored is None:
        return SloPolicy()  # a journal from before the guard: the defaults
    if not isinstance(stored, dict):
        raise ValueError("the SLO guard settings are not a mapping")
    return SloPolicy.from_dict(stored)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


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
    GUARD = "guard"  # the SLO guard lowered or raised a broker's rate (`broker`, `rate`)
    NOTE = "note"  # anything else worth telling the operator
    END = "end"  # the run ended: outcome and moves done (a view with its own summary skips it)


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
    state: str = ""  # STATE: the move's new state; GATE: the verdict (open / wait / hold);
    # GUARD: lowered / raised
    broker: int | None = None  # GUARD: the broker whose level changed ...
    rate: int = 0  # ... and its new level, bytes/s


Reporter = Callable[[Event], None]


def ignore_events(event: Event) -> None:
    """The default reporter."""
