"""Pure gate decisions: may the next move start, judged from metric readings.

The gate re-creates the careful manual practice: after a move, wait until the network in
(bytes in + replication in) of the brokers that received a replica and out (bytes out +
replication out) of the broker that sent it is back near its pre-move baseline (or under an
absolute floor) for K consecutive samples, no partition is under-replicated besides those
moving, and (optionally) produce p99 latency is under an SLO. Missing metrics never count as
settled: they HOLD the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.core.names import listed
from topology.model import TopicPartition
from topology.units import rate_text


class GateVerdict(StrEnum):
    OPEN = "open"  # the next move may start
    WAIT = "wait"  # metrics readable, cluster not settled yet
    HOLD = "hold"  # metrics unavailable: never start blind


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """When a broker counts as settled, and for how many consecutive samples.

    margin: settled when rate <= baseline * (1 + margin); floor_bytes_per_sec: settled when
    rate <= floor whatever the baseline (an idle broker's baseline is noise).
    """

    margin: float = 0.10
    floor_bytes_per_sec: float = 1_000_000.0
    consecutive: int = 3
    produce_p99_max_ms: float | None = None

    def __post_init__(self) -> None:
        if self.margin < 0:
            raise InputError(f"gate margin must not be negative, got {self.margin}")
        if self.floor_bytes_per_sec < 0:
            raise InputError(f"gate floor must not be negative, got {self.floor_bytes_per_sec}")
        if self.consecutive < 1:
            raise InputError(f"gate needs at least 1 consecutive sample, got {self.consecutive}")
        if self.produce_p99_max_ms is not None and self.produce_p99_max_ms <= 0:
            raise InputError(f"produce p99 SLO must be positive, got {self.produce_p99_max_ms}")


@dataclass(frozen=True, slots=True)
class NetworkSample:
    """Network rates per broker in bytes/s: in = bytes in + replication in; out likewise."""

    net_in: Mapping[int, float]
    net_out: Mapping[int, float]


@dataclass(frozen=True, slots=True)
class GateReading:
    """One sample of everything the gate looks at; network None = metrics unavailable."""

    network: NetworkSample | None
    under_replicated: frozenset[TopicPartition] = frozenset()
    produce_p99_ms: float | None = None
    unavailable: str = ""  # why network is None (for the HOLD message)


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The verdict, a reason a human can read, and the settled-sample streak so far."""

    verdict: GateVerdict
    reason: str
    streak: int = 0
    details: tuple[str, ...] = field(default=())

    @property
    def open(self) -> bool:
        return self.verdict is GateVerdict.OPEN


def _hold(reading: GateReading, ins: Iterable[int], outs: Iterable[int]) -> GateDecision | None:
    if reading.network is None:
        why = reading.unavailable or "no answer"
        return GateDecision(GateVerdict.HOLD, f"metrics unavailable ({why}); holding, will retry")
    missing = sorted({b for b in ins if b not in reading.network.net_in}
                     | {b for b in outs if b not in reading.network.net_out})
    if missing:
        return GateDecision(GateVerdict.HOLD,
                            f"no network metrics for broker(s) {list(missing)}; holding")
    return None


def start_decision(reading: GateReading, ins: Iterable[int], outs: Iterable[int]) -> GateDecision:
    """May a move start that receives on `ins` and sends from `outs`? Only with a readable
    baseline for each of those directions."""
    held = _hold(reading, ins, outs)
    return held or GateDecision(GateVerdict.OPEN, "baseline read", 0)


def _unsettled(policy: GatePolicy, baseline: NetworkSample, now: NetworkSample) -> list[str]:
    problems = []
    for direction, base, cur in (("in", baseline.net_in, now.net_in),
                                 ("out", baseline.net_out, now.net_out)):
        for b in sorted(base):
            limit = max(base[b] * (1 + policy.margin), policy.floor_bytes_per_sec)
            if cur[b] > limit:
                problems.append(f"broker {b} network {direction} {rate_text(cur[b])} "
                                f"> {rate_text(limit)}")
    return problems


def gate_decision(policy: GatePolicy, baseline: NetworkSample, reading: GateReading,
                  moving: frozenset[TopicPartition], streak: int) -> GateDecision:
    """The gate after a move: OPEN after `policy.consecutive` settled samples of the directions
    its baseline was read for (the move's ends: a receiver's in, a sender's out).

    `streak` is the number of settled samples just before this one; any unsettled or missing
    sample resets it.
    """
    held = _hold(reading, baseline.net_in, baseline.net_out)
    if held is not None or reading.network is None:
        return held or GateDecision(GateVerdict.HOLD, "metrics unavailable")
    slo = policy.produce_p99_max_ms
    if slo is not None and reading.produce_p99_ms is None:
        return GateDecision(GateVerdict.HOLD, "no produce p99 latency series for the SLO guard; "
                            "holding")
    details: list[str] = []
    other_urp = sorted(reading.under_replicated - moving, key=lambda tp: (tp.topic, tp.partition))
    if other_urp:
        details.append(f"{len(other_urp)} under-replicated partition(s): "
                       f"{listed([str(tp) for tp in other_urp], 5)}")
    if slo is not None and reading.produce_p99_ms is not None and reading.produce_p99_ms > slo:
        details.append(f"produce p99 {reading.produce_p99_ms:.1f} ms > SLO {slo:.1f} ms")
    details.extend(_unsettled(policy, baseline, reading.network))
    if details:
        return GateDecision(GateVerdict.WAIT, "waiting: " + "; ".join(details), 0,
                            tuple(details))
    settled = streak + 1
    if settled >= policy.consecutive:
        return GateDecision(GateVerdict.OPEN,
                            f"settled for {settled} consecutive sample(s)", settled)
    return GateDecision(GateVerdict.WAIT,
                        f"settled {settled}/{policy.consecutive} consecutive samples", settled)
