"""The planner's output values: Move (validated on construction) and PlanResult."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from kafka_rebalance.core.errors import PlanError
from topology.model import (
    INT32_MAX,
    TOPIC_NOUN,
    KeyedByPartition,
    Topology,
    is_kafka_id,
    is_topic_name,
)

if TYPE_CHECKING:
    from planner.balance import Targets
    from planner.log_dirs import DirPlan


class SolverStatus(StrEnum):
    """How the plan was reached."""

    ALREADY_BALANCED = "already_balanced"  # nothing to do: empty plan
    OPTIMAL = "optimal"  # proven optimal for the model solved
    FEASIBLE = "feasible"  # solver improved the plan, optimality not proven
    GREEDY = "greedy"  # solver found nothing better than the greedy warm start
    BEST_EFFORT = "best_effort"  # full balance unreachable (budget/racks): best reachable
    LEADERS_ONLY = "leaders_only"  # --demote-broker: leadership moved off brokers, no data


@dataclass(frozen=True, slots=True)
class Move(KeyedByPartition):
    """One partition's change of replica list. Leader first in both lists."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int
    # added_brokers, made once: the ordering and the ETA's schedule ask it millions of times
    _added: tuple[int, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not is_topic_name(self.topic):
            raise PlanError(f"move {self.topic!r}-{self.partition!r}: the topic must be "
                            f"{TOPIC_NOUN}")
        name = self.name
        ids = (self.partition, *self.current, *self.target)
        if not all(is_kafka_id(i) for i in ids):
            raise PlanError(f"move {name}: partition and broker ids must be integers from 0 to "
                            f"{INT32_MAX}, got {self.partition!r}, {list(self.current)} -> "
                            f"{list(self.target)}")
        if len(self.current) != len(self.target):
            raise PlanError(f"move {name}: replication factor changes "
                            f"({len(self.current)} -> {len(self.target)})")
        if len(set(self.target)) != len(self.target):
            raise PlanError(f"move {name}: target {list(self.target)} repeats a broker")
        if self.current == self.target:
            raise PlanError(f"move {name}: target equals current replicas")
        if self.size_bytes < 0:
            raise PlanError(f"move {name}: negative size")
        object.__setattr__(self, "_added",
                           tuple(b for b in self.target if b not in self.current))

    @property
    def added_brokers(self) -> tuple[int, ...]:
        """Brokers that receive a new replica (targets of the data copy), in target order."""
        return self._added

    @property
    def removed_brokers(self) -> tuple[int, ...]:
        """Brokers that drop their replica."""
        return tuple(b for b in self.current if b not in self.target)

    @property
    def bytes_moved(self) -> int:
        return self.size_bytes * len(self.added_brokers)

    @property
    def leadership_only(self) -> bool:
        """True when only the replica order changes (no bytes move)."""
        return not self.added_brokers


class MoveTotals:
    """What a plan's moves add up to; shared by the planner's result, the plan file and the
    executor's plan."""

    __slots__ = ()
    moves: tuple[Move, ...]

    @property
    def bytes_moved(self) -> int:
        return sum(m.bytes_moved for m in self.moves)

    @property
    def data_moves(self) -> int:
        """Moves that copy data (not leadership only)."""
        return sum(1 for m in self.moves if not m.leadership_only)


@dataclass(frozen=True)
class PlanResult(MoveTotals):
    """A plan: the topology before and after, the ordered moves and how it was found."""

    before: Topology
    after: Topology
    moves: tuple[Move, ...]
    status: SolverStatus
    lower_bound_bytes: int
    excess_over_bound: float | None = None  # bytes moved / lower bound - 1 (not a solver gap)
    binding: tuple[str, ...] = field(default=())
    solve_seconds: float = 0.0
    targets: Targets | None = None
    proven_gap: float | None = None  # CP-SAT's own gap to its bound, whole-cluster model only
    disk_lower_bound_bytes: int | None = None  # lower_bound_bytes counts net in as well
    phase_seconds: tuple[tuple[str, float], ...] = ()  # where the time went (planner.phases)
    log_dirs: DirPlan | None = None  # JBOD brokers only (planner.log_dirs)
