"""Pure SLO guard decisions: how fast may copies run while clients are hurting.

The gate between moves protects the next move; the guard protects clients while a move copies.
Every `every_seconds` during a copy it reads the leading indicators large operators alert on:
produce and consumer-fetch p99 and log flush p95 per broker, under-replicated partitions
outside the moves, and consumer lag where such a series exists. Then, per broker that is an end
of a copy (a sender's out, a receiver's in):

- a breach on that broker, or a cluster-wide one (under-replication, lag), halves its guard
  level. A breach is judged against the cluster's own normal, read before the run's first
  copy: a latency past the flag or twice the broker's own value before (a busy broker's normal
  is not something the copies caused), under-replication past the count before (a dead
  broker's partitions are not either). The level never goes under `floor_fraction` of the
  cap (multiplicative decrease: a copy that stops never ends, and the stall detector would
  cancel it);
- no breach raises it by `increase_fraction` of the cap (additive increase) up to the cap.

A move's rates are its own rates capped by the levels of its brokers (executor.steps applies
them), so the guard never sets a rate above --max-mbps and never loosens an operator's throttle.
A series that does not exist is not a breach: the guard watches what the exporter offers (the
run says once which indicators it cannot see).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kafka_rebalance.core.errors import InputError
from topology.units import rate_text

# Indicator names, as decisions and the exported metrics spell them.
PRODUCE_P99 = "produce_p99"
FETCH_P99 = "fetch_p99"
FLUSH_P95 = "flush_p95"
UNDER_REPLICATED = "under_replicated"
CONSUMER_LAG = "consumer_lag"
INDICATORS = (PRODUCE_P99, FETCH_P99, FLUSH_P95, UNDER_REPLICATED, CONSUMER_LAG)


# The guard's default thresholds, for SloPolicy and the CLI flags alike.
DEFAULT_PRODUCE_P99_MS = 500.0
DEFAULT_FETCH_P99_MS = 1500.0
DEFAULT_FLUSH_P95_MS = 500.0
DEFAULT_UNDER_REPLICATED = 0
DEFAULT_EVERY_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class SloPolicy:
    """Thresholds (None: not guarded on) and the AIMD steps.

    The defaults leave a healthy cluster alone: a consumer fetch waits up to fetch.max.wait.ms
    (500 ms by default) by design, so its p99 threshold sits above that; produce p99 and flush
    p95 at 500 ms are far above a healthy broker and well inside what clients notice.
    """

    enabled: bool = True
    produce_p99_max_ms: float | None = DEFAULT_PRODUCE_P99_MS
    fetch_p99_max_ms: float | None = DEFAULT_FETCH_P99_MS
    flush_p95_max_ms: float | None = DEFAULT_FLUSH_P95_MS
    under_replicated_max: int | None = DEFAULT_UNDER_REPLICATED  # outside the moves
    consumer_lag_max: float | None = None  # a threshold only the workload can tell
    decrease: float = 0.5
    increase_fraction: float = 0.10
    floor_fraction: float = 0.125
    every_seconds: float = DEFAULT_EVERY_SECONDS
    # judge against the cluster's own normal before the run (False: the thresholds alone)
    baseline: bool = True

    def __post_init__(self) -> None:
        for name in ("produce_p99_max_ms", "fetch_p99_max_ms", "flush_p95_max_ms",
                     "consumer_lag_max"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InputError(f"SLO guard: {name} must be positive, got {value}")
        if self.under_replicated_max is not None and self.under_replicated_max < 0:
            raise InputError("SLO guard: under-replicated partitions allowed must be >= 0")
        if not 0 < self.decrease < 1:
            raise InputError(f"SLO guard: decrease must be between 0 and 1, got {self.decrease}")
        if not 0 < self.increase_fraction <= 1 or not 0 < self.floor_fraction <= 1:
            raise InputError("SLO guard: increase and floor are fractions of the cap in (0, 1]")
        if not self.every_seconds > 0:
            raise InputError(f"SLO guard: interval must be positive, got {self.every_seconds}")

    def to_dict(self) -> dict[str, object]:
        return {"enabled": self.enabled, "produce_p99_max_ms": self.produce_p99_max_ms,
                "fetch_p99_max_ms": self.fetch_p99_max_ms,
                "flush_p95_max_ms": self.flush_p95_max_ms,
                "under_replicated_max": self.under_replicated_max,
                "consumer_lag_max": self.consumer_lag_max, "decrease": self.decrease,
                "increase_fraction": self.increase_fraction,
                "floor_fraction": self.floor_fraction, "every_seconds": self.every_seconds,
                "baseline": self.baseline}

    @classmethod
    def from_dict(cls, values: Mapping[str, object]) -> SloPolicy:
        """A policy from `to_dict` output (a journal header); missing keys take the defaults;
        a malformed value raises ValueError."""
        base = cls()

        def number(key: str) -> float | None:
            value = values.get(key, getattr(base, key))
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"SLO guard {key} {str(value)[:40]!r} is not a number")
            return float(value)

        def given(key: str) -> float:
            value = number(key)
            if value is None:
                raise ValueError(f"SLO guard {key} must be set")
            return value

        urp = number("under_replicated_max")
        return cls(enabled=bool(values.get("enabled", base.enabled)),
                   produce_p99_max_ms=number("produce_p99_max_ms"),
                   fetch_p99_max_ms=number("fetch_p99_max_ms"),
                   flush_p95_max_ms=number("flush_p95_max_ms"),
                   under_replicated_max=None if urp is None else int(urp),
                   consumer_lag_max=number("consumer_lag_max"), decrease=given("decrease"),
                   increase_fraction=given("increase_fraction"),
                   floor_fraction=given("floor_fraction"), every_seconds=given("every_seconds"),
                   baseline=bool(values.get("baseline", base.baseline)))

    def watched(self) -> tuple[str, ...]:
        """The indicators with a threshold."""
        limits = {PRODUCE_P99: self.produce_p99_max_ms, FETCH_P99: self.fetch_p99_max_ms,
                  FLUSH_P95: self.flush_p95_max_ms, UNDER_REPLICATED: self.under_replicated_max,
                  CONSUMER_LAG: self.consumer_lag_max}
        return tuple(name for name in INDICATORS if limits[name] is not None)


@dataclass(frozen=True, slots=True)
class SloReading:
    """One sample of the indicators: per-broker values, and the cluster-wide ones.

    `under_replicated` is the brokers' own count (Prometheus); None where no series
    answered (`absent` names the indicators whose series do not exist).
    `under_replicated_near` attributes the partitions outside the run's moves that lack a live
    in-sync replica to brokers, from the cluster's metadata: per broker, those it leads or
    lags on (executor.readings.under_replicated_near); None where the metadata did not answer,
    and then under-replication counts cluster-wide."""

    produce_p99_ms: Mapping[int, float] = field(default_factory=dict)
    fetch_p99_ms: Mapping[int, float] = field(default_factory=dict)
    flush_p95_ms: Mapping[int, float] = field(default_factory=dict)
    under_replicated: int | None = None
    consumer_lag: float | None = None
    absent: frozenset[str] = frozenset()
    under_replicated_near: Mapping[int, int] | None = None


@dataclass(frozen=True, slots=True)
class LevelChange:
    """One broker's guard level moving, and why."""

    broker: int
    old: int
    new: int
    reason: str

    @property
    def lowered(self) -> bool:
        return self.new < self.old

    def text(self) -> str:
        verb = "lowered" if self.lowered else "raised"
        return (f"broker {self.broker} {verb} {rate_text(self.old)} -> {rate_text(self.new)}"
                f" ({self.reason})")


# A broker is held to its own normal where that is worse than the flags: a value counts as a
# breach only past this multiple of what it was before the run.
BASELINE_FACTOR = 2.0


def _limit(flag: float | None, before: float | None) -> float | None:
    """The flag, or BASELINE_FACTOR x the value before the run where that is higher (a busy
    broker's normal is not a breach the copies caused)."""
    if flag is None:
        return None
    return flag if before is None else max(flag, BASELINE_FACTOR * before)


def breaches(policy: SloPolicy, reading: SloReading, brokers: Iterable[int],
             baseline: SloReading | None = None) -> dict[int, list[str]]:
    """What each of `brokers` breaches now (brokers without a breach are left out), judged
    against the cluster's own normal (`baseline`, read before the run's first copy): a
    latency breaches past the flag or twice the broker's own value before, whichever is
    higher; under-replication and lag past the flag or the count before, whichever is higher
    (a dead broker's partitions are no breach the copies caused). Under-replication counts on
    the brokers it is attributed to (those leading or lagging on the partitions) where the
    cluster's metadata says, so only the copies through them slow; otherwise, like consumer
    lag, it is cluster-wide and counts on every broker: whichever copy causes it, each slows."""
    before = (baseline if policy.baseline else None) or SloReading()
    shared: list[str] = []
    urp, lag = reading.under_replicated, reading.consumer_lag
    near = reading.under_replicated_near
    urp_limit = policy.under_replicated_max
    if near is None and urp_limit is not None and before.under_replicated is not None:
        urp_limit = max(urp_limit, before.under_replicated)
    if near is None and urp_limit is not None and urp is not None and urp > urp_limit:
        shared.append(f"{urp} under-replicated partition(s) outside the moves > {urp_limit}")
    lag_limit = _limit(policy.consumer_lag_max, before.consumer_lag)
    if lag_limit is not None and lag is not None and lag > lag_limit:
        shared.append(f"consumer lag {lag:.0f} > {lag_limit:g}")
    found: dict[int, list[str]] = {}
    for b in brokers:
        own = []
        for what, values, flag, earlier in (
                ("produce p99", reading.produce_p99_ms, policy.produce_p99_max_ms,
                 before.produce_p99_ms),
                ("fetch p99", reading.fetch_p99_ms, policy.fetch_p99_max_ms,
                 before.fetch_p99_ms),
                ("log flush p95", reading.flush_p95_ms, policy.flush_p95_max_ms,
                 before.flush_p95_ms)):
            limit = _limit(flag, earlier.get(b))
            if limit is not None and b in values and values[b] > limit:
                own.append(f"{what} {values[b]:.0f} ms > {limit:g} ms")
        if near is not None and policy.under_replicated_max is not None:
            # the broker's own count before; with no metadata then, the cluster's count
            earlier_here = (before.under_replicated_near.get(b, 0)
                            if before.under_replicated_near is not None
                            else before.under_replicated or 0)
            limit_here = max(policy.under_replicated_max, earlier_here)
            if near.get(b, 0) > limit_here:
                own.append(f"{near[b]} partition(s) outside the moves under-replicated, led "
                           f"or followed here > {limit_here}")
        if own or shared:
            found[b] = own + shared
    return found


# A latency percentile that has not moved at all for this long has had no new request: Kafka's
# histograms change only as requests come (a broker whose only producer stalled once keeps
# that request's time as its p99 for minutes), so it says nothing of clients now. Longer than
# any sensible scrape interval, over which a reading repeats by design.
STALE_SECONDS = 60.0
LATENCIES = ("produce_p99_ms", "fetch_p99_ms", "flush_p95_ms")
Unchanged = Mapping[tuple[str, int], tuple[float, float]]  # (indicator, broker) -> value, since


def without_stale(reading: SloReading, unchanged: Unchanged, now: float
                  ) -> tuple[SloReading, dict[tuple[str, int], tuple[float, float]], list[str]]:
    """The reading without the latencies unchanged for STALE_SECONDS (left unjudged, as if
    absent), the values seen and since when (for the next reading), and what was dropped
    ("broker 6 produce p99")."""
    seen: dict[tuple[str, int], tuple[float, float]] = {}
    kept: dict[str, dict[int, float]] = {}
    dropped: list[str] = []
    for name in LATENCIES:
        kept[name] = {}
        for broker, value in getattr(reading, name).items():
            old = unchanged.get((name, broker))
            since = old[1] if old is not None and old[0] == value else now
            seen[name, broker] = (value, since)
            if now - since < STALE_SECONDS:
                kept[name][broker] = value
            else:
                dropped.append(f"broker {broker} {name.removesuffix('_ms').replace('_', ' ')}")
    fresh = replace(reading, produce_p99_ms=kept["produce_p99_ms"],
                    fetch_p99_ms=kept["fetch_p99_ms"], flush_p95_ms=kept["flush_p95_ms"])
    return fresh, seen, dropped


def floor_rate(policy: SloPolicy, cap: int) -> int:
    """The lowest level the guard sets."""
    return max(1, int(cap * policy.floor_fraction))


def next_levels(policy: SloPolicy, cap: int, levels: Mapping[int, int],
                found: Mapping[int, list[str]], brokers: Iterable[int],
                in_force: Mapping[int, int] | None = None) -> list[LevelChange]:
    """The AIMD step for `brokers` (the ends of the copies in flight): breached brokers halve,
    the others climb back toward the cap. A broker without a level is at the cap. A breach
    halves from the rate in force on the broker where that is lower than its level (`in_force`:
    the highest rate its copies' throttles set, an operator's lower throttle or adaptive rates
    kept), so that the first step already slows the copy rather than lowering a ceiling above
    it."""
    changes = []
    floor, step = floor_rate(policy, cap), max(1, int(cap * policy.increase_fraction))
    for b in sorted(set(brokers)):
        old = min(levels.get(b, cap), cap)
        if b in found:
            new = max(floor, int(min(old, (in_force or {}).get(b, old)) * policy.decrease))
            reason = "; ".join(found[b])
        else:
            new = min(cap, old + step)
            reason = "indicators within their SLO"
        if new != old:
            changes.append(LevelChange(b, old, new, reason))
    return changes


def guarded(rates: Mapping[int, Mapping[str, int]],
            levels: Mapping[int, int]) -> dict[int, dict[str, int]]:
    """Each broker's rates capped by its guard level."""
    return {b: {name: min(rate, levels.get(b, rate)) for name, rate in by_name.items()}
            for b, by_name in rates.items()}
