"""A run on the terminal for `rebalance execute` and friends: the live progress view, the dry-run
preview and the end-of-run report lines.

The progress view is an executor Reporter: it folds events into the run's progress
(executor.progress) and renders it (move i of n, bytes moved of total, current rate against
the cap, ETA, gate state). It prints one line per
change (kafka_rebalance.report.run_lines): on a terminal above a rich Live panel, in a pipe or a
log alone, with a line at each quarter of a copy instead of the panel.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from executor.config import Event
from executor.progress import Flight, ProgressState
from executor.state import MoveState
from kafka_rebalance.core.names import listed
from kafka_rebalance.report.run_lines import RunLines
from topology.units import duration_text, rate_text, size_text

if TYPE_CHECKING:
    from executor.milestones import RunTimeline
    from executor.runner import RunReport
    from executor.throttle import ThrottlePlan
    from planner.result import Move

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


def _share(flight: Flight) -> str:
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
