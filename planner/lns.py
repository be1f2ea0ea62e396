"""CP-SAT large-neighbourhood improvement (placeholder until the model lands)."""

from __future__ import annotations

from planner.state import SolverState


def improve(state: SolverState, deadline: float, seed: int) -> bool:
    return False
