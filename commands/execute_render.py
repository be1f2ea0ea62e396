"""Rendering for `rebalance execute` and friends: the live progress view, the dry-run preview
and the end-of-run report lines.

The progress view is an executor Reporter: it folds events into a small state and renders it
(move i of n, bytes moved of total, current rate against the cap, ETA, gate state). It prints
one line per change (commands.run_lines): on a terminal above a rich Live panel, in a pipe or a
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

from commands.run_lines import RunLines
from executor.config import Event, EventKind
from executor.state import MoveState
from executor.units import duration_text, rate_text, size_text

if TYPE_CHECKING:
    from executor.runner import RunReport
    from executor.throttle import ThrottlePlan
    from executor.timeline import RunTimeline
    from planner.result import Move

# Rate estimate: bytes over the last RATE_WINDOW_S seconds of progress events.
RATE_WINDOW_S = 10.0


@dataclass
class ProgressState:
    """What the display knows: the move in flight, bytes, recent progress samples, the gate."""

    total_moves: int
    bytes_total: int
    cap_bytes_per_sec: int
    bytes_before: int = 0  # bytes of moves already done when this process started
    done_bytes: int = 0  # bytes of moves done in this process
    moves_done: int = 0
    current: str = ""
    current_index: int = 0
    current_bytes: int = 0
    current_total: int = 0
    state: str = "starting"
    gate: str = ""
    samples: list[tuple[float, int]] = field(default_factory=list)

    @property
    def bytes_moved(self) -> int:
        return self.bytes_before + self.done_bytes + self.current_bytes

    def rate(self) -> float | None:
        """Copy rate of the move in flight (bytes/s) over the recent window, if measurable."""
        if len(self.samples) < 2:
            return None
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else None

    def eta_seconds(self) -> float:
        """Remaining bytes over the measured rate (the cap until a rate is measured)."""
        rate = self.rate() or float(self.cap_bytes_per_sec)
        return max(self.bytes_total - self.bytes_moved, 0) / max(rate, 1.0)

    def fold(self, event: Event, now: float) -> None:
        """Update from one executor event."""
        if event.kind is EventKind.STATE:
            self._state(event)
        elif event.kind is EventKind.PROGRESS:
            if event.move != self.current:
                self._switch(event)
            self.current_bytes = min(event.bytes_done, event.bytes_total or event.bytes_done)
            self.samples.append((now, event.bytes_done))
            while len(self.samples) > 2 and now - self.samples[0][0] > RATE_WINDOW_S:
                self.samples.pop(0)
        elif event.kind in (EventKind.GATE, EventKind.HOLD):
            self.gate = event.message

    def _switch(self, event: Event) -> None:
        self.current, self.current_index = event.move, event.index
        self.current_total, self.current_bytes = event.bytes_total, 0
        self.samples = []

    def _state(self, event: Event) -> None:
        if event.state == MoveState.THROTTLING.value:
            self._switch(event)
            self.gate = ""
        if event.move == self.current:
            self.state = event.state
        if event.state == MoveState.DONE.value:
            self.moves_done += 1
            self.done_bytes += event.bytes_total
            if event.move == self.current:
                self.current_bytes = 0
                self.samples = []


def render_progress(p: ProgressState) -> Table:
    """The live panel: one row per fact, readable at a glance."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    rate = p.rate()
    cap = rate_text(p.cap_bytes_per_sec)
    table.add_row("move", escape(f"{p.current_index} of {p.total_moves}: {p.current or '-'} "
                                 f"({p.state})"))
    table.add_row("this move", f"{size_text(p.current_bytes)} of "
                               f"{size_text(p.current_total)}")
    table.add_row("all moves", f"{size_text(p.bytes_moved)} of {size_text(p.bytes_total)}"
                               f" ({p.moves_done} move(s) done)")
    table.add_row("rate", f"{rate_text(rate) if rate is not None else '-'} "
                          f"(cap {cap} per broker)")
    table.add_row("ETA", duration_text(p.eta_seconds()))
    table.add_row("gate", escape(p.gate or "-"))
    return table


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
