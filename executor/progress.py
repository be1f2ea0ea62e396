"""A run's progress as the live view shows it: executor events folded into the moves in flight
(each with its own recent rate, so one move's report never resets another's), bytes moved of
the total, the gate's state, and an ETA laid out the way the run lays out its moves.

Pure: `fold` takes each event with the time it arrived; nothing here reads a clock or prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from executor.config import Event, EventKind
from executor.state import MoveState
from executor.timeline import remaining_seconds, run_concurrency, run_header, run_settle, to_copy

if TYPE_CHECKING:
    from executor.journal import RunState
    from executor.records import Record

# Rate estimate: bytes over the last RATE_WINDOW_S seconds of progress events.
RATE_WINDOW_S = 10.0
# The ETA's layout of the moves left is redone after this many seconds of events; in between
# it counts down.
ETA_EVERY_S = 10.0


@dataclass
class Flight:
    """A move started and not yet ended, as the display knows it."""

    index: int
    total: int
    done: int = 0
    state: str = "throttling"
    samples: list[tuple[float, int]] = field(default_factory=list)  # (time, bytes done)

    def rate(self) -> float | None:
        """This copy's rate over its recent samples (bytes/s), if measurable."""
        if len(self.samples) < 2:
            return None
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else None


# What the panel's ETA rests on: the seconds until the unfinished moves are done when each
# still copies the bytes given (by name) at a rate per copy, with the quota window given
# (executor.timeline.remaining_seconds with the run's moves, concurrency and settle wait).
EtaModel = Callable[[Mapping[str, float], float, float], float]


@dataclass
class ProgressState:
    """What the display knows: the moves in flight (each with its own recent progress, so one
    move's report never resets another's rate), bytes, the gate, and what is left per move."""

    total_moves: int
    bytes_total: int
    cap_bytes_per_sec: int
    bytes_before: int = 0  # bytes of moves already done when this process started
    done_bytes: int = 0  # bytes of moves done in this process
    moves_done: int = 0
    current: str = ""  # the move started last
    state: str = "starting"
    gate: str = ""
    flight: dict[str, Flight] = field(default_factory=dict)
    left: dict[str, float] = field(default_factory=dict)  # bytes still to copy, by move
    eta_model: EtaModel | None = None
    # the seconds a copy into a broker waits after the last one into it (the run's choice:
    # the journal's header, until the run has read the brokers' own: use_quota_window)
    quota_window_seconds: float = 0.0
    # the ETA eta_model laid out last, (event time then, seconds), counted down between
    # layouts: laying out thousands of moves takes a second or more, and the panel redraws
    # twice a second
    laid_out: tuple[float, float] | None = None
    now: float = 0.0  # the time of the latest event folded

    @property
    def current_index(self) -> int:
        return self.flight[self.current].index if self.current in self.flight else 0

    @property
    def current_total(self) -> int:
        return self.flight[self.current].total if self.current in self.flight else 0

    @property
    def current_bytes(self) -> int:
        return self.flight[self.current].done if self.current in self.flight else 0

    @property
    def bytes_moved(self) -> int:
        return self.bytes_before + self.done_bytes + sum(f.done for f in self.flight.values())

    def _rates(self) -> list[float]:
        """Each copy in flight's rate, where measurable."""
        return [r for f in self.flight.values() if (r := f.rate()) is not None]

    def rate(self) -> float | None:
        """The copies in flight together (bytes/s), each over its recent samples; None before
        any is measurable."""
        rates = self._rates()
        return sum(rates) if rates else None

    def copy_rate(self) -> float | None:
        """The mean rate of one copy now (bytes/s): what the remaining copies are timed at."""
        moving = [r for r in self._rates() if r > 0]
        return sum(moving) / len(moving) if moving else None

    def eta_seconds(self) -> float:
        """Until every move is done: the remaining copies at the measured rate per copy (the
        cap until one is measured), laid out as the run lays them out (eta_model)."""
        rate = max(self.copy_rate() or float(self.cap_bytes_per_sec), 1.0)
        if self.eta_model is None or not self.left:
            return max(self.bytes_total - self.bytes_moved, 0) / rate
        if self.laid_out is not None and self.now - self.laid_out[0] < ETA_EVERY_S:
            at, seconds = self.laid_out
            return max(0.0, seconds - (self.now - at))
        seconds = self.eta_model(self.left, rate, self.quota_window_seconds)
        self.laid_out = (self.now, seconds)
        return seconds

    def use_quota_window(self, seconds: float) -> None:
        """Lay the moves out with the quota window the run chose from now on."""
        self.quota_window_seconds, self.laid_out = seconds, None

    def fold(self, event: Event, now: float) -> None:
        """Update from one executor event."""
        self.now = max(self.now, now)
        if event.kind is EventKind.STATE:
            self._state(event)
        elif event.kind is EventKind.PROGRESS:
            flight = self._flight(event)
            flight.done = min(event.bytes_done, event.bytes_total or event.bytes_done)
            flight.samples.append((now, event.bytes_done))
            while len(flight.samples) > 2 and now - flight.samples[0][0] > RATE_WINDOW_S:
                flight.samples.pop(0)
            if event.move in self.left:
                self.left[event.move] = max(0.0, float(flight.total - flight.done))
        elif event.kind in (EventKind.GATE, EventKind.HOLD):
            self.gate = event.message

    def _flight(self, event: Event) -> Flight:
        if event.move not in self.flight:
            self.flight[event.move] = Flight(event.index, event.bytes_total)
            self.current = event.move
        return self.flight[event.move]

    def _state(self, event: Event) -> None:
        if event.state == MoveState.THROTTLING.value:
            self.flight.pop(event.move, None)  # started (again): its progress starts over
            self._flight(event)
            self.gate = ""
        if event.move in self.flight:
            self.flight[event.move].state = event.state
        if event.move == self.current:
            self.state = event.state
        if event.state == MoveState.DONE.value:
            self.moves_done += 1
            self.done_bytes += event.bytes_total
        if event.state in _ENDED:
            self.flight.pop(event.move, None)
            self.left.pop(event.move, None)


_ENDED = frozenset({MoveState.DONE.value, MoveState.FAILED.value, MoveState.CANCELLED.value})


def progress_of(run: RunState, cap: int, records: list[Record] | None = None) -> ProgressState:
    """The progress of `run` as a process taking it up finds it: moves already done count as
    moved; with `records` (the journal so far) the ETA follows the run's own concurrency and
    settle wait."""
    done = sum(m.bytes_moved for m in run.plan.moves if run.state_of(m.name) is MoveState.DONE)
    state = ProgressState(len(run.plan.moves), run.plan.bytes_moved, cap, bytes_before=done)
    if records:
        state.left, state.eta_model = eta_model(run, records)
        state.quota_window_seconds = run_header(records).quota_window_seconds
    return state


def eta_model(run: RunState, records: list[Record]) -> tuple[dict[str, float], EtaModel]:
    """What the live panel's ETA rests on: each unfinished move's bytes to copy, and the
    status's own model of the time they take (executor.timeline.remaining_seconds with the
    run's concurrency and settle wait from its journal header, and the quota window the run
    waits on)."""
    unfinished = run.unfinished
    concurrency, settle = run_concurrency(records), run_settle(records)

    def seconds(left: Mapping[str, float], rate: float, quota_window: float) -> float:
        # a move leaves `left` as it ends (ProgressState.fold): the rest are still to finish
        still = [m for m in unfinished if m.name in left]
        return remaining_seconds(still, left, rate, concurrency, settle, quota_window)[0]
    return {m.name: float(m.bytes_moved) for m in to_copy(run)}, seconds
