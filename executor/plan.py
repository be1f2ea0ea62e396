"""What the executor runs: an ordered tuple of moves and the fingerprint of the cluster they
were planned against. Built from the plan file by its reader; the executor never parses files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_rebalance.core.errors import PlanError
from planner.log_dirs import DirPlan
from planner.result import Move, MoveTotals
from topology.model import TopicPartition


@dataclass(frozen=True, slots=True)
class ExecutionPlan(MoveTotals):
    """Moves in the order they must run (at most one per partition) and a cluster fingerprint."""

    moves: tuple[Move, ...]
    fingerprint: str | None = None
    # JBOD brokers: the dir of each arriving replica and the moves between a broker's dirs,
    # run once every partition move is done (executor.dirs)
    log_dirs: DirPlan | None = None
    # move name -> its 0-based position: a run looks moves up by name at every event, and a
    # scan of a plan of tens of thousands of moves each time made a run quadratic
    _positions: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        positions: dict[str, int] = {}
        seen: set[TopicPartition] = set()
        for index, move in enumerate(self.moves):
            if move.key in seen:
                raise PlanError(f"partition {move.name} appears in more than one move; "
                                "a plan moves each partition once")
            seen.add(move.key)
            positions[move.name] = index
        object.__setattr__(self, "_positions", positions)

    @classmethod
    def of(cls, moves: Iterable[Move], fingerprint: str | None = None,
           log_dirs: DirPlan | None = None) -> ExecutionPlan:
        return cls(tuple(moves), fingerprint, log_dirs)

    @property
    def plan_id(self) -> str:
        """A stable hash of the moves (partition, current, target): ties a journal to its plan."""
        h = hashlib.sha256()
        for m in self.moves:
            h.update(f"{m.topic}\x00{m.partition}\x00{m.current}\x00{m.target}\n".encode())
        dirs = self.log_dirs
        if dirs is not None and not dirs.empty:  # plans without log dirs keep their ids
            for (tp, b), path in dirs.sorted_placements():
                h.update(f"place\x00{tp.topic}\x00{tp.partition}\x00{b}\x00{path}\n".encode())
            for d in dirs.moves:
                h.update(f"dir\x00{d.replica}\x00{d.source}\x00{d.target}\n".encode())
        return "sha256:" + h.hexdigest()[:32]

    def position(self, name: str) -> int:
        """The 1-based position of the move of partition `name` ("topic-partition")."""
        index = self._positions.get(name)
        if index is None:
            raise PlanError(f"the plan has no move for partition {name}")
        return index + 1

    def move(self, name: str) -> Move:
        """The move of partition `name` ("topic-partition")."""
        return self.moves[self.position(name) - 1]

