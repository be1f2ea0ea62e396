"""Self-healing: when a broker that holds replicas is offline long enough, its drain is due.

Pure: the topology, when each broker was first seen offline and the clock come in as values.
A broker offline for less than the grace period may be restarting (a rolling upgrade, a
crash and a quick restart): draining it would copy every replica it holds only to make the
cluster copy them back, so the cycle waits. Past the grace period the planner drains it
(replicas on offline brokers are a hard violation that repair moves first). A partition none
of whose replicas is on a live broker cannot be healed by any move (there is nothing to copy
from): the cycle says so and does nothing, the way an operator would want to be called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from topology.model import Topology

DEFAULT_GRACE_SECONDS = 600.0
_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Healing:
    """What the offline brokers call for now: `waiting` names those still inside the grace
    period (no plan this cycle), `lost` the partitions no move can heal."""

    offline: tuple[int, ...]
    waiting: str = ""
    lost: str = ""


def offline_since(topology: Topology, seen: Mapping[int, float], now: float) -> dict[int, float]:
    """When each offline broker was first seen offline: kept from `seen`, `now` for a broker
    newly offline; a broker back online drops out."""
    offline = [b.id for b in topology.brokers if not b.alive]
    return {b: seen.get(b, now) for b in sorted(offline)}


def healing(topology: Topology, since: Mapping[int, float], now: float,
            grace_seconds: float) -> Healing:
    """The verdict on the offline brokers (see the module docstring)."""
    offline = tuple(sorted(since))
    if not offline:
        return Healing(())
    dead = set(offline)
    lost = sorted(p.name for p in topology.partitions if p.replicas and set(p.replicas) <= dead)
    if lost:
        more = f" and {len(lost) - _SHOWN} more" if len(lost) > _SHOWN else ""
        return Healing(offline, lost=(
            f"{len(lost)} partition(s) have no replica on a live broker "
            f"({', '.join(lost[:_SHOWN])}{more}): more brokers are offline ({list(offline)}) "
            "than their replication factor survives, and no move can copy data that no live "
            "broker holds; bring one of those brokers back"))
    young = {b: now - at for b, at in since.items() if now - at < grace_seconds}
    if young:
        ages = ", ".join(f"broker {b} for {age:.0f} s" for b, age in sorted(young.items()))
        return Healing(offline, waiting=(
            f"offline: {ages}; it is drained once it has been offline for {grace_seconds:.0f} "
            "s (--drain-dead-after), unless it comes back first"))
    return Healing(offline)
