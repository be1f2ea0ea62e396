"""When each move of a run started, copied and ended, as the journal's fold records them
(executor.journal.fold): the milestones of the latest attempt of each move, and the run's first,
last and end times.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from executor.decide import COPY_ENDED_UNSEEN
from executor.state import MoveState

S = MoveState


@dataclass(frozen=True, slots=True)
class MoveTiming:
    """Clock times (seconds) of one move's milestones in its latest attempt; None: not yet."""

    started_at: float | None = None  # entered throttling
    copying_at: float | None = None  # reassignment submitted: the copy is under way
    copied_at: float | None = None  # the copy ended (verifying), or was cut short (cancelling)
    ended_at: float | None = None  # done, cancelled or failed

    @property
    def copy_seconds(self) -> float | None:
        """How long the copy ran; None when it never started or has not ended."""
        if self.copying_at is None or self.copied_at is None:
            return None
        return max(0.0, self.copied_at - self.copying_at)

    def seconds(self, now: float) -> float | None:
        """Start to end (to `now` while the move is in flight)."""
        if self.started_at is None:
            return None
        return max(0.0, (self.ended_at if self.ended_at is not None else now) - self.started_at)


@dataclass(frozen=True)
class RunTimeline:
    """The run's first and last times and each move's milestones."""

    started_at: float | None  # the first record after the header: the first move's start
    ended_at: float | None  # the end record; None while running, or after a kill
    last_at: float | None  # the latest record of any kind
    moves: Mapping[str, MoveTiming]

    def elapsed(self, now: float) -> float | None:
        """First record to the end (to `now` while the run has not ended)."""
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else now
        return max(0.0, end - self.started_at)

    def of(self, name: str) -> MoveTiming:
        return self.moves.get(name, MoveTiming())


def milestone(timing: MoveTiming, state: str, at: float, reason: str = "") -> MoveTiming:
    if state == S.THROTTLING.value:
        return MoveTiming(started_at=at)
    if state == S.COPYING.value:
        return replace(timing, copying_at=at)
    if state == S.VERIFYING.value and reason == COPY_ENDED_UNSEEN:
        return replace(timing, copying_at=None)  # when it ended is unknown: no copy time
    if state == S.VERIFYING.value or (state == S.CANCELLING.value and
                                      timing.copying_at is not None and timing.copied_at is None):
        return replace(timing, copied_at=at)
    if state in (S.DONE.value, S.CANCELLED.value, S.FAILED.value):
        return replace(timing, ended_at=at)
    return timing
