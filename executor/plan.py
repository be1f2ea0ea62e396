"""What the executor runs: an ordered tuple of moves and the fingerprint of the cluster they
were planned against. Built from the plan file by its reader; the executor never parses files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_rebalance.core.errors import PlanError
from planner.result import Move, MoveTotals
from topology.model import TopicPartition


@dataclass(frozen=True, slots=True)
class ExecutionPlan(MoveTotals):
    """Moves in the order they must run (at most one per partition) and a cluster fingerprint."""

    moves: tuple[Move, ...]
    fingerprint: str | None = None

    def __post_init__(self) -> None:
        seen: set[TopicPartition] = set()
        for move in self.moves:
            if move.key in seen:
                raise PlanError(f"partition {move.name} appears in more than one move; "
                                "a plan moves each partition once")
            seen.add(move.key)

    @classmethod
    def of(cls, moves: Iterable[Move], fingerprint: str | None = None) -> ExecutionPlan:
        return cls(tuple(moves), fingerprint)

    @property
    def plan_id(self) -> str:
        """A stable hash of the moves (partition, current, target): ties a journal to its plan."""
        h = hashlib.sha256()
        for m in self.moves:
            h.update(f"{m.topic}\x00{m.partition}\x00{m.current}\x00{m.target}\n".encode())
        return "sha256:" + h.hexdigest()[:32]

    def move(self, name: str) -> Move:
        """The move of partition `name` ("topic-partition")."""
        for m in self.moves:
            if m.name == name:
                return m
        raise PlanError(f"the plan has no move for partition {name}")

