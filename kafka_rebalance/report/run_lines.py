"""The run as a log: one line per change an operator cares about, never one per poll.

The executor reports every poll (progress, each gate sample, each held start); `RunLines` folds
those events and says what is new: a move started, its throttle set, its copy done (in how
long, at what rate against the cap), replicas in sync and the throttle cleared, the gate's
verdict when it changes (wait -> open, and after how long), the move done, cancelled or failed.
In a pipe it also marks each quarter of a copy; on a terminal the live panel shows progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from executor.config import Event, EventKind
from executor.decide import COPY_ENDED_UNSEEN
from executor.state import MoveState
from topology.units import duration_text, rate_text, share_text, size_text

if TYPE_CHECKING:  # the journal and plan types pull in numpy: not at start-up
    from executor.milestones import RunTimeline
    from planner.result import Move

S = MoveState
# the steps of a leadership-only move, said in its one 'done' line
_LEADERSHIP_QUIET = frozenset(s.value for s in (S.THROTTLING, S.SUBMITTED, S.COPYING,
                                                S.VERIFYING, S.UNTHROTTLING, S.ELECTING,
                                                S.COOLING_DOWN))


@dataclass
class _Seen:
    """What has been said of one move."""

    state: str = ""
    started_at: float | None = None
    copying_at: float | None = None
    gate: str = ""  # the last gate verdict printed
    gate_since: float | None = None  # the first gate sample after the move
    held: bool = False  # a 'not started' line is out; quiet until the move starts
    quarters: int = 0  # quarters of the copy reported (pipe only)


@dataclass
class RunLines:
    """Event -> the lines it adds (often none). `moves`: the plan's moves by name (replicas and
    sizes); `times`: the journal's milestones, so a resumed move's copy is timed from its start."""

    cap_bytes_per_sec: float
    moves: Mapping[str, Move] = field(default_factory=dict)
    progress_lines: bool = True
    times: RunTimeline | None = None
    seen: dict[str, _Seen] = field(default_factory=dict)

    def _seen(self, name: str) -> _Seen:
        if name not in self.seen:
            timing = self.times.of(name) if self.times is not None else None
            self.seen[name] = _Seen(started_at=timing.started_at if timing else None,
                                    copying_at=timing.copying_at if timing else None)
        return self.seen[name]

    def lines(self, event: Event, now: float) -> list[str]:
        """The lines `event` adds at clock time `now`."""
        if event.kind is EventKind.STATE:
            line = self._state(event, now)
        elif event.kind is EventKind.GATE:
            line = self._gate(event, now)
        elif event.kind is EventKind.HOLD:
            seen = self._seen(event.move)
            line, seen.held = (None if seen.held else event.message), True
        elif event.kind is EventKind.PROGRESS:
            line = self._progress(event, now) if self.progress_lines else None
        elif event.kind is EventKind.END:
            line = None  # the run's summary, printed next, says it with the per-move table
        else:
            line = event.message
        if line is None:
            return []
        return [(f"[{event.index}/{event.total}] " if event.index else "") + line]

    def _state(self, event: Event, now: float) -> str | None:
        name, state = event.move, event.state
        seen = self._seen(name)
        before, seen.state, seen.held = seen.state, state, False
        reason = _reason(event)
        size = size_text(event.bytes_total)
        move = self.moves.get(name)
        if move is not None and move.leadership_only and state in _LEADERSHIP_QUIET:
            if state == S.THROTTLING.value:
                seen.started_at = now
            return None  # one line when done: leadership changes come by the hundred
        if state == S.DONE.value and move is not None and move.leadership_only:
            return (f"{name}: done, replicas {list(move.current)} -> {list(move.target)}"
                    + (f" ({reason})" if reason else ""))
        if state == S.THROTTLING.value:
            seen.started_at, seen.copying_at, seen.gate, seen.gate_since = now, None, "", None
            seen.quarters = 0
            replicas = (f", replicas {list(move.current)} -> {list(move.target)}"
                        if move is not None else "")
            what = (f"{size} to copy" if event.bytes_total
                    else "leadership only" if move is not None and move.leadership_only
                    else "new replicas of an empty partition")
            return f"{name}: started ({what}{replicas})"
        if state == S.COPYING.value:
            seen.copying_at = now
            if not event.bytes_total:
                return f"{name}: reassignment submitted (nothing to copy)"
            return (f"{name}: throttle set ({rate_text(self.cap_bytes_per_sec)} cap per "
                    f"broker), reassignment submitted; copying {size}")
        if state == S.VERIFYING.value:
            copied = (f"copy of {size} ended while no executor was running (its rate is "
                      "unknown)" if reason == COPY_ENDED_UNSEEN
                      else self._copied(event, seen, now))
            return f"{name}: {copied}; checking replicas and ISR"
        if state in (S.SUBMITTED.value, S.UNTHROTTLING.value):
            return None  # said by the next line (throttle set / throttle cleared)
        if state == S.ELECTING.value:
            return f"{name}: replicas in sync, throttle cleared; electing the preferred leader"
        if state == S.COOLING_DOWN.value:
            head = ("replicas in sync, throttle cleared; " if before == S.UNTHROTTLING.value
                    else "")
            return f"{name}: {head}cooling down" + (f" ({reason})" if reason else "")
        if state == S.DONE.value:
            took = (f" in {duration_text(now - seen.started_at)}"
                    if seen.started_at is not None else "")
            return f"{name}: done{took}" + (f" ({reason})" if reason else "")
        label = "FAILED" if state == S.FAILED.value else state
        return f"{name}: {label}" + (f" ({reason})" if reason else "")

    def _copied(self, event: Event, seen: _Seen, now: float) -> str:
        size = size_text(event.bytes_total)
        if seen.copying_at is None or not event.bytes_total:
            return f"copy of {size} ended"
        took = now - seen.copying_at
        if took <= 0:
            return f"copied {size}"
        rate = event.bytes_total / took
        return (f"copied {size} in {duration_text(took)} ({rate_text(rate)}, "
                f"{share_text(rate, self.cap_bytes_per_sec)} of the cap)")

    def _gate(self, event: Event, now: float) -> str | None:
        seen = self._seen(event.move)
        if seen.gate_since is None:
            seen.gate_since = now
        verdict = event.state
        if verdict == seen.gate:
            return None
        seen.gate = verdict
        head = f"gate after {event.move}: {verdict}, "
        detail = event.message[len(head):] if event.message.startswith(head) else event.message
        waited = (f" after {duration_text(now - seen.gate_since)}"  # not "after 0s"
                  if verdict == "open" and now - seen.gate_since >= 1 else "")
        return f"gate after {event.move}: {verdict}{waited} ({detail})"

    def _progress(self, event: Event, now: float) -> str | None:
        total = event.bytes_total
        if total <= 0:
            return None
        seen = self._seen(event.move)
        done = min(event.bytes_done, total)
        quarter = min(3, 4 * done // total)
        if quarter <= seen.quarters:
            return None
        seen.quarters = quarter
        line = f"{event.move}: {100 * done // total}% copied ({size_text(done)} of " \
               f"{size_text(total)}"
        if seen.copying_at is not None and now > seen.copying_at:
            rate = done / (now - seen.copying_at)
            line += f", {rate_text(rate)}"
            if rate > 0:
                line += f", about {duration_text((total - done) / rate)} left"
        return line + ")"


def _reason(event: Event) -> str:
    """The reason a state event carries: its message is 'NAME: STATE (REASON)'."""
    head = f"{event.move}: {event.state} ("
    if event.message.startswith(head) and event.message.endswith(")"):
        return event.message[len(head):-1]
    return ""
