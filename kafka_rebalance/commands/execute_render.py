"""Rendering for `rebalance execute` and friends: the live progress view, the dry-run preview
and the end-of-run report lines.

The progress view is an executor Reporter: it folds events into a small state and renders it (move i
of n, bytes moved of total, current rate against the cap, ETA, gate state). It prints one line per
change (kafka_rebalance.commands.run_lines): on a terminal above a rich Live panel, in a pipe or a
log alone, with a line at each quarter of a copy instead of the panel.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from executor.config import Event, EventKind
from executor.state import MoveState
from kafka_rebalance.commands.run_lines import RunLines
from kafka_rebalance.core.names import listed
from topology.units import duration_text, rate_text, size_text

if TYPE_CHECKING:
    from executor.milestones import RunTimeline
    from executor.runner import RunReport
    from executor.throttle import ThrottlePlan
    from planner.result import Move

# Rate estimate: bytes over the last RATE_WINDOW_S seconds of progress events.
RATE_WINDOW_S = 10.0


@dataclass
class _Flight:
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
# still copies the bytes given (by name) at a rate per copy (executor.timeline.remaining_seconds
# with the run's moves, concurrency and settle wait), or None: remaining bytes over the rate.
EtaModel = Callable[[Mapping[str, float], float], float]


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
    flight: dict[str, _Flight] = field(default_factory=dict)
    left: dict[str, float] = field(default_factory=dict)  # bytes still to copy, by move
    eta_model: EtaModel | None = None

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
        if self.eta_model is not None and self.left:
            return self.eta_model(self.left, rate)
        return max(self.bytes_total - self.bytes_moved, 0) / rate

    def fold(self, event: Event, now: float) -> None:
        """Update from one executor event."""
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

    def _flight(self, event: Event) -> _Flight:
        if event.move not in self.flight:
            self.flight[event.move] = _Flight(event.index, event.bytes_total)
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


def render_progress(p: ProgressState) -> Table:
    """The live panel: one row per fact, readable at a glance."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    rate = p.rate()
    cap = rate_text(p.cap_bytes_per_sec)
    flying = sorted(p.flight.items(), key=lambda item: item[1].index)
    if len(flying) > 1:
        shown = listed([f"{name} ({f.state}, {_share(f)})" for name, f in flying], 3)
        table.add_row("moves", escape(f"{len(flying)} in flight: {shown}"))
    else:
        table.add_row("move", escape(f"{p.current_index} of {p.total_moves}: {p.current or '-'} "
                                     f"({p.state})"))
        table.add_row("this move", f"{size_text(p.current_bytes)} of "
                                   f"{size_text(p.current_total)}")
    table.add_row("all moves", f"{size_text(p.bytes_moved)} of {size_text(p.bytes_total)}"
                               f" ({p.moves_done} move(s) done)")
    copies = f" over {len(flying)} copies" if len(flying) > 1 else ""
    table.add_row("rate", f"{rate_text(rate) if rate is not None else '-'}{copies} "
                          f"(cap {cap} per broker)")
    table.add_row("ETA", duration_text(p.eta_seconds()))
    table.add_row("gate", escape(p.gate or "-"))
    return table


def _share(flight: _Flight) -> str:
    return f"{flight.done / flight.total:.0%}" if flight.total else "-"


class ProgressView:
    """An executor Reporter that shows progress; use as a context manager around the run.

    `moves` (the plan's, by name) and `times` (the journal's milestones, for a resumed run)
    make the lines more telling; `clock` must tell the journal's time (wall-clock seconds).
    """

    def __init__(self, console: Console, state: ProgressState,
                 clock: Callable[[], float] = time.time, *,
                 moves: Mapping[str, Move] | None = None,
                 times: RunTimeline | None = None) -> None:
        self.console = console
        self.state = state
        self.clock = clock
        self.live = (Live(get_renderable=lambda: render_progress(self.state), console=console,
                          refresh_per_second=2, transient=False)
                     if console.is_terminal else None)
        self.lines = RunLines(state.cap_bytes_per_sec, moves or {},
                              progress_lines=self.live is None, times=times)

    def __enter__(self) -> ProgressView:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def __call__(self, event: Event) -> None:
        now = self.clock()
        self.state.fold(event, now)
        for line in self.lines.lines(event, now):
            self._line(line)

    def _line(self, text: str) -> None:
        self.console.print(Text(time.strftime("%H:%M:%S ") + text), highlight=False,
                           soft_wrap=True)


def preview_table(throttles: list[ThrottlePlan], total: int) -> Table:
    """The dry-run: each move's throttle as it would be set now."""
    table = Table(title=f"Dry run: {total} move(s), nothing changed")
    for header in ("#", "partition", "broker rates", "leader list adds",
                   "follower list adds", "notes"):
        table.add_column(header)
    for index, plan in enumerate(throttles, start=1):
        rates = "; ".join(f"{b}: " + ", ".join(f"{n.split('.')[0]} {rate_text(v)}"
                                               for n, v in r.items())
                          for b, r in sorted(plan.broker_rates.items()))
        table.add_row(*(escape(cell) for cell in (
            str(index), plan.move, rates or "(none: leadership only)",
            ",".join(plan.leader_entries), ",".join(plan.follower_entries),
            "; ".join(plan.notes))))
    return table


def report_lines(report: RunReport) -> list[str]:
    """The end of a run in a few lines of plain text (print them with `say`, never as
    markup: they hold partition names and reasons)."""
    lines = [f"run {report.outcome.value}: {report.done} of {len(report.states)} move(s) done"]
    for name, state in report.states.items():
        if state in (MoveState.FAILED, MoveState.CANCELLED):
            lines.append(f"  {name}: {state.value} ({report.reasons.get(name, '')})")
    if report.stop_reason:
        lines.append(f"stopped: {report.stop_reason}")
    if report.throttles_left:
        lines.append("throttles may be left by " + ", ".join(report.throttles_left)
                     + ": run `rebalance clear-throttles`")
    return lines
