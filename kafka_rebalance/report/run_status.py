"""The end of a run and `rebalance status`, rendered from the journal (the journal is the run).

Every run of `execute`, `resume` or `cancel` ends with a summary however it ends: elapsed time,
bytes moved, the mean copy rate against the cap, and a table of the moves that started. `status`
shows where a run stands, with an ETA, as text or as a stable JSON document (`--json`), from
the view the status use case builds (`kafka_rebalance.usecases.status`: an
`executor.status.StatusView`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from executor.journal import RunState
from executor.milestones import RunTimeline
from executor.records import RunOutcome
from executor.schedule import COPY_EFFICIENCY
from executor.state import MoveState
from executor.status import summarize
from executor.timeline import COPIED, copy_pace
from topology.units import duration_text, rate_text, share_text, size_text

if TYPE_CHECKING:
    from executor.status import StatusView

STATUS_VERSION = 1


def _copy_line(run: RunState, times: RunTimeline) -> str:
    """The mean copy rate, against the cap its copies ran under (the time-weighted mean when
    a resume changed it: copies made at 1 MB/s are no 192% of a 500 kB/s cap set after)."""
    pace = copy_pace(run, times)
    if pace.rate is None:
        return "no copy has finished yet"
    cap = pace.cap
    against = (f" of the {rate_text(cap)} {'mean ' if len(pace.caps) > 1 else ''}cap "
               f"({share_text(pace.rate, cap)})" if cap else "")
    return (f"copying took {duration_text(pace.seconds)} in all: mean "
            f"{rate_text(pace.rate)}{against}")


def summary_head(run: RunState, times: RunTimeline, ending: str, now: float) -> list[str]:
    """Two or three lines: how the run ended and after how long, moves and bytes, the mean copy
    rate against the cap, and the moves that never started."""
    status = summarize(run)
    done = status.counts.get(MoveState.DONE, 0)
    elapsed = times.elapsed(now)
    after = f" after {duration_text(elapsed)}" if elapsed is not None else ""
    lines = [f"run {ending}{after}: {done} of {status.total_moves} move(s) done, "
             f"{size_text(status.bytes_done)} of {size_text(status.bytes_total)} moved",
             _copy_line(run, times)]
    if run.guard_steps:
        lowest = (f", down to {rate_text(run.guard_lowest)} at the lowest"
                  if run.guard_lowest else "")
        lines.append(f"SLO guard: {run.guard_steps} step(s) changed brokers' rates{lowest} "
                     "(the journal's guard records say why)")
    unstarted = sum(1 for m in run.plan.moves if times.of(m.name).started_at is None)
    if unstarted:
        lines.append(f"{unstarted} move(s) not started")
    return lines


def moves_table(run: RunState, times: RunTimeline, now: float) -> Table:
    """One row per move that started: bytes, start (from the run's start), duration, copy time,
    mean copy rate (share of the cap in force when it started; only for a copy that ended in
    place) and state."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header in ("#", "partition", "bytes", "started", "took", "copy", "mean rate", "state"):
        # a long topic name folds onto more lines, never cut, and takes no other column's room
        table.add_column(header, justify="left" if header in ("partition", "state")
                         else "right", no_wrap=header != "partition",
                         overflow="fold" if header == "partition" else "ellipsis",
                         min_width=len(header))
    origin = times.started_at or 0.0
    for index, move in enumerate(run.plan.moves, start=1):
        timing = times.of(move.name)
        if timing.started_at is None:
            continue
        took, copy = timing.seconds(now), timing.copy_seconds
        in_place = run.state_of(move.name) in COPIED  # a copy cut short has no mean rate
        rate = move.bytes_moved / copy if move.bytes_moved and copy and in_place else None
        cap = run.cap_at(timing.started_at)
        table.add_row(
            str(index), escape(move.name), size_text(move.bytes_moved),
            "+" + duration_text(timing.started_at - origin),
            duration_text(took) if took is not None else "-",
            duration_text(copy) if copy is not None else "-",
            (f"{rate_text(rate)}" + (f" ({share_text(rate, cap)})" if cap else ""))
            if rate is not None else "-",
            run.state_of(move.name).value)
    return table


def run_summary(run: RunState, times: RunTimeline, ending: str, now: float) -> Group:
    """The end-of-run summary: `summary_head` and, when a move started, `moves_table`."""
    parts: list[Text | Table] = [Text(line) for line in summary_head(run, times, ending, now)]
    if any(times.of(m.name).started_at is not None for m in run.plan.moves):
        parts.append(moves_table(run, times, now))
    return Group(*parts)


# ---- status ----------------------------------------------------------------------------------
def _iso(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def _eta_seconds(view: StatusView) -> float | None:
    if view.status.outcome is RunOutcome.COMPLETED:
        return 0.0
    return round(view.eta.seconds, 1) if view.eta is not None else None


def status_document(view: StatusView) -> dict[str, Any]:
    """`status --json`: a stable document (version 1); times in UTC ISO 8601, sizes in bytes,
    durations in seconds, null where unknown."""
    status, eta = view.status, view.eta
    elapsed = view.elapsed
    pace = copy_pace(view.run, view.times)
    return {
        "version": STATUS_VERSION,
        "journal": view.journal,
        "plan": view.plan,
        "plan_id": status.plan_id,
        "state": view.state,
        "running": view.running,
        "moves_done": status.counts.get(MoveState.DONE, 0),
        "moves_total": status.total_moves,
        "moves_by_state": {s.value: n for s, n in sorted(status.counts.items())},
        "bytes_done": status.bytes_done,
        "bytes_total": status.bytes_total,
        "current_moves": [{"index": i, "partition": name, "state": state.value,
                           "bytes": size, "started_at": _iso(at)}
                          for i, name, state, size, at in view.in_flight],
        "started_at": _iso(view.times.started_at),
        "ended_at": _iso(view.times.ended_at),
        "last_record_at": _iso(view.times.last_at),
        "elapsed_seconds": None if elapsed is None else round(elapsed, 1),
        "eta_seconds": _eta_seconds(view),
        "eta_basis": None if eta is None else "observed" if eta.observed else "cap",
        "eta_rate_bytes_per_sec": None if eta is None else round(eta.rate, 1),
        "eta_concurrency": None if eta is None else eta.concurrency,
        "mean_copy_rate_bytes_per_sec": None if pace.rate is None else round(pace.rate, 1),
        "cap_bytes_per_sec": view.cap,
        "end_reason": status.end_reason,
        "next_step": status.next_step_for(view.running),
        "throttles_left": list(status.throttles_left),
        **({"dir_moves_total": status.dir_moves_total,
            "dir_moves_ended": status.dir_moves_ended} if status.dir_moves_total else {}),
        "notable_moves": [{"index": m.index, "partition": m.name, "state": m.state.value,
                           "bytes": m.bytes_total, "reason": m.reason,
                           "throttles_left": m.throttles_left} for m in status.notable],
    }


def eta_text(view: StatusView) -> str:
    """The ETA and what it rests on: the observed mean copy rate, or the cap before any copy
    has finished; a run that no executor holds gets it once resumed."""
    eta = view.eta
    if view.status.outcome is RunOutcome.COMPLETED:
        return "none: every move is done"
    if eta is None:
        return "-: nothing left to run" if not view.run.unfinished else "-: no rate known"
    basis = (f"the observed mean copy rate, {rate_text(eta.rate)}" if eta.observed
             else f"{rate_text(eta.rate)}, {COPY_EFFICIENCY:.0%} of the cap as Kafka's quota "
             "delivers it (no copy has finished yet)")
    waits = f", plus {duration_text(eta.waits)} of waits between moves" if eta.waits else ""
    if eta.concurrency != 1:
        basis += " per copy"
        waits = (f", moves side by side (--concurrency {eta.concurrency}) with "
                 f"{duration_text(eta.waits)} between two on a broker")
    when = "" if view.state == "running" else " once resumed"
    return (f"{duration_text(eta.seconds)}{when}: {size_text(eta.bytes_left)} left to copy at "
            f"{basis}{waits}")


def _local(at: float) -> str:
    return datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def status_table(view: StatusView) -> Group:
    """`rebalance status` as text: the run's state, counts, bytes, times, ETA, the notable
    moves and the next step."""
    status = view.status
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("journal", escape(view.journal))
    head.add_row("plan", escape(f"{view.plan} ({status.plan_id})" if view.plan
                                else status.plan_id))
    head.add_row("state", view.state if view.state != "interrupted" else
                 "interrupted: no executor holds the journal (`rebalance resume` continues)")
    if status.end_reason:
        head.add_row("reason", escape(status.end_reason))
    head.add_row("moves", ", ".join(f"{n} {s.value}" for s, n in sorted(
        status.counts.items(), key=lambda kv: kv[0].value)) + f" (of {status.total_moves})")
    head.add_row("bytes", f"{size_text(status.bytes_done)} of "
                          f"{size_text(status.bytes_total)} moved")
    if status.dir_moves_total:
        head.add_row("log dirs", f"{status.dir_moves_ended} of {status.dir_moves_total} "
                                 "move(s) between a broker's dirs ended")
    for _, name, state, _, at in view.in_flight:
        since = ("" if at is None else f" for {duration_text(view.now - at)}"
                 if view.state == "running" else f" since {_local(at)}")
        head.add_row("in flight", escape(f"{name}: {state.value}{since}"))
    times = view.times
    if times.started_at is not None:
        head.add_row("started", _local(times.started_at))
        head.add_row("elapsed", duration_text(view.elapsed or 0.0)
                     + (" so far" if view.state == "running" else ""))
    if view.state == "interrupted" and times.last_at is not None:
        head.add_row("last record", f"{_local(times.last_at)} "
                                    f"({duration_text(view.now - times.last_at)} ago)")
    head.add_row("copy rate", escape(_copy_line(view.run, view.times)))
    head.add_row("ETA", escape(eta_text(view)))
    head.add_row("next", escape(status.next_step_for(view.running)))
    parts: list[Table] = [head]
    if status.notable:
        moves = Table(title="Moves in flight or ended early")
        for header in ("#", "partition", "state", "bytes", "throttles left", "reason"):
            # a long name folds onto more lines, never cut: -0 and -1 must stay apart
            moves.add_column(header, overflow="fold" if header == "partition" else "ellipsis",
                             no_wrap=header in ("#", "state", "bytes"))
        for m in status.notable:
            moves.add_row(str(m.index), escape(m.name), m.state.value,
                          size_text(m.bytes_total), "yes" if m.throttles_left else "no",
                          escape(m.reason))
        parts.append(moves)
    return Group(*parts)
