"""The pure step of a move: from its state and what the cluster shows now, the next state.

`decide(state, move, observation, tracking, stall_intervals)` is the whole rule of the states
that only look at the cluster and act on it (throttling, submitted, copying, verifying,
unthrottling, electing); executor.steps gathers the observation, carries out the action the
step names and journals the next state. The cooldown after a move is decided here too, in two
steps around the one read it needs: `without_gate` (done without a gate, and why) before the gate
is read, `after_gate` (done, wait, or stop the run) once executor.gates judged the reading.

The run's own decisions are here as well: where each move goes when the run is cancelled
(`on_cancel`), whether a reassignment found in flight at a cancel is reverted (`revert_listed`)
and what the cancel does then (`after_revert`),
how a run ended (`run_outcome`), whether a move would overrun the maintenance window
(`overrun`) and whether a copy ending now hands its brokers to the next move (`hands_over`).
Which pending moves start is decided per move in the order of the checks the starter makes,
each once what it needs has been read (`turn_before_ends`, `turn_for_ends`, `turn_for_window`,
`turn_after_start`).
executor.runner, executor.steps and executor.starts read the cluster, call these and apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum, StrEnum

from executor.gates import GateDecision
from executor.records import RunOutcome
from executor.state import MoveState
from planner.result import Move

S = MoveState


class Action(StrEnum):
    NONE = "none"
    SUBMIT = "submit"  # ask Kafka to reassign the partition to the move's target


@dataclass(frozen=True, slots=True)
class Tracking:
    """What a move's earlier polls saw (not journaled: rebuilt from the cluster after a
    crash)."""

    last_progress: tuple[int, tuple[int, ...]] | None = None
    idle_polls: int = 0
    gate_streak: int = 0
    copy_polls: int = 0
    offline_polls: int = 0  # consecutive polls a target broker was missing from the cluster


@dataclass(frozen=True, slots=True)
class Observation:
    """What the driver read for one step; each state looks at its own part.

    listed: the partition's reassignment is in flight; replicas/isr: the partition now (None:
    it is gone); dead: brokers of the move's target that are offline; progress: bytes on the new
    replicas (-1: unreadable) and the ISR; problems: what a throttle write or restore read back
    differently (or why it could not be done); waiting: the rates a restore could not put back
    because their broker is offline (the move is done all the same; clear-throttles restores
    them); failure: why an effect failed, where the move goes on anyway (a leader election);
    watched: this process has followed the copy (it submitted it, or saw it in flight), so it
    knows when it ended."""

    listed: bool = False
    replicas: tuple[int, ...] | None = None
    isr: tuple[int, ...] = ()
    dead: tuple[int, ...] = ()
    progress: tuple[int, tuple[int, ...]] = (-1, ())
    problems: tuple[str, ...] = ()
    failure: str = ""
    watched: bool = True
    waiting: tuple[str, ...] = ()  # throttles left on offline brokers (restored once back)


# A target broker missing from the cluster's live brokers this many polls in a row went
# offline: one answer is not enough, since a DescribeCluster answered while another broker
# dies can leave live brokers out (seen on the sandbox: a kill -9 of a broker outside the move
# made one answer omit both of the move's targets). Kafka itself fences a broker only after
# its session times out (9 s by default), so the wait costs nothing a real failure would not.
OFFLINE_POLLS = 3

# The reason of a copy found ended by a process that took the run over: it ended while no
# executor ran, at a time nobody saw, so no copy rate can be told from it.
COPY_ENDED_UNSEEN = "its copy ended while no executor was running"


@dataclass(frozen=True, slots=True)
class Step:
    """The decision: the next state (None: stay and poll again), why, what to do first, and
    the tracking to keep."""

    next: MoveState | None
    reason: str = ""
    action: Action = Action.NONE
    tracking: Tracking = field(default_factory=Tracking)


def decide(state: MoveState, move: Move, seen: Observation, tracking: Tracking,
           stall_intervals: int, *, elect_leaders: bool = True) -> Step:
    """The step of `move` in `state` given what was `seen`."""
    if state is S.THROTTLING:
        return _after_write(seen, S.SUBMITTED, tracking)
    if state is S.SUBMITTED:
        return _submitted(move, seen)
    if state is S.COPYING:
        return _copying(move, seen, tracking, stall_intervals)
    if state is S.VERIFYING:
        return _verifying(move, seen, tracking, stall_intervals)
    if state is S.UNTHROTTLING:
        if seen.problems:
            return Step(S.FAILED, "; ".join(seen.problems) + "; run `rebalance "
                        "clear-throttles` once the brokers are reachable", tracking=tracking)
        waiting = ("; ".join(seen.waiting) + ": the partition is in place; `rebalance "
                   "clear-throttles` puts that rate back once the broker is up"
                   if seen.waiting else "")
        return Step(S.ELECTING if elect_leaders else S.COOLING_DOWN, waiting,
                    tracking=tracking)
    if state is S.ELECTING:
        reason = (f"preferred leader election failed ({seen.failure}); leadership stays as is"
                  if seen.failure else "")
        return Step(S.COOLING_DOWN, reason, tracking=Tracking())
    raise ValueError(f"no pure step for state {state.value}")


def _after_write(seen: Observation, then: MoveState, tracking: Tracking) -> Step:
    if seen.problems:
        return Step(S.CANCELLING, "throttle read back differs: " + "; ".join(seen.problems),
                    tracking=tracking)
    return Step(then, tracking=tracking)


def _submitted(move: Move, seen: Observation) -> Step:
    if not seen.listed:
        if seen.replicas is None:
            return Step(S.CANCELLING, "the partition disappeared")
        if seen.replicas == move.current:
            return Step(S.COPYING, action=Action.SUBMIT)
        if seen.replicas != move.target:
            return Step(S.CANCELLING,
                        f"replicas changed to {list(seen.replicas)} outside this run")
    return Step(S.COPYING)  # submitted before (a crash after the request), or already done


def _copying(move: Move, seen: Observation, tracking: Tracking, stall_intervals: int) -> Step:
    if not seen.listed:
        return Step(S.VERIFYING, "" if seen.watched else COPY_ENDED_UNSEEN)
    if seen.dead:
        tracking = replace(tracking, offline_polls=tracking.offline_polls + 1)
        if tracking.offline_polls < OFFLINE_POLLS:
            return Step(None, tracking=tracking)
        return Step(S.CANCELLING, f"broker(s) {sorted(seen.dead)} went offline during the move",
                    tracking=tracking)
    tracking = replace(tracking, offline_polls=0)
    if seen.progress != tracking.last_progress:
        tracking = replace(tracking, last_progress=seen.progress, idle_polls=0)
    else:
        tracking = replace(tracking, idle_polls=tracking.idle_polls + 1)
    if tracking.idle_polls >= stall_intervals:
        return Step(S.CANCELLING,
                    f"no progress for {tracking.idle_polls} polls (destination bytes and ISR "
                    "unchanged); a target broker may be unhealthy", tracking=tracking)
    return Step(None, tracking=replace(tracking, copy_polls=tracking.copy_polls + 1))


def _verifying(move: Move, seen: Observation, tracking: Tracking,
               stall_intervals: int) -> Step:
    """Replicas equal the target and the replicas the move added are in sync (a replica it
    kept may be out of sync for reasons of its own, such as its broker dying during the copy:
    the partition is under-replicated, but not by this move, and Kafka ended the reassignment
    without it); metadata may lag the reassignment list by a poll or two, so anything else is
    only concluded after `stall_intervals` polls."""
    if seen.replicas == move.target and set(move.added_brokers) <= set(seen.isr):
        behind = sorted(set(move.target) - set(seen.isr))
        said = (f"broker(s) {behind} kept their replica but are out of sync (offline?): the "
                "partition stays under-replicated until they catch up" if behind else "")
        return Step(S.UNTHROTTLING, said, tracking=tracking)
    tracking = replace(tracking, idle_polls=tracking.idle_polls + 1)
    if tracking.idle_polls < stall_intervals:
        return Step(None, tracking=tracking)
    if seen.replicas == move.target:
        reason = f"replicas {list(move.target)} in place but ISR is {list(seen.isr)}"
    else:
        found = list(seen.replicas) if seen.replicas is not None else "nothing"
        reason = f"reassignment ended outside this run: cluster has {found}"
    return Step(S.CANCELLING, reason, tracking=tracking)


@dataclass(frozen=True, slots=True)
class Cooling:
    """What the cooldown after a move looks at before its gate is read: the run is cancelled
    (`cancelled`), the move copied nothing, another move copies through every end its gate
    would watch (`handed_over_to`: that move's name, whose gate covers both), and whether a
    move that copies is still pending (else no next copy needs the gate, unless
    --final-gate)."""

    cancelled: bool = False
    leadership_only: bool = False
    handed_over_to: str | None = None
    copy_pending: bool = True
    final_gate: bool = False


def without_gate(cooling: Cooling) -> str | None:
    """Why the move is done without reading its gate; None: read it."""
    if cooling.cancelled:
        return "gate skipped: run cancelled"
    if cooling.leadership_only:
        return "leadership only: it copied nothing, no gate"
    if cooling.handed_over_to is not None:
        return f"handed over to {cooling.handed_over_to}: its gate covers both"
    if not (cooling.copy_pending or cooling.final_gate):
        return "no move is left to start: gate not needed"
    return None


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """After the gate's verdict: done (its reason, which stops the run when `stop`), or wait
    and poll again (`done` False)."""

    done: bool
    reason: str = ""
    stop: bool = False


def after_gate(name: str, decision: GateDecision, left_seconds: float,
               timeout_seconds: float | None) -> GateOutcome:
    """The move `name` `left_seconds` before its cooldown ends (negative: past it): it waits
    out the cooldown whatever the gate says; then it is done when the gate is open, or when
    the gate stayed closed `timeout_seconds` past the cooldown, and the run starts no next
    move (a gate that never opens is a fault to look at, not a wait without end)."""
    if left_seconds > 0:
        return GateOutcome(False)
    if decision.open:
        return GateOutcome(True)
    if timeout_seconds is not None and -left_seconds >= timeout_seconds:
        return GateOutcome(True, f"the gate after {name} stayed closed for {-left_seconds:.0f} s "
                                 f"({decision.reason}); stopping before the next move",
                           stop=True)
    return GateOutcome(False)


# ---- the run ---------------------------------------------------------------------------------
# Where a move goes when the operator cancels the run, by its state: one not started ends
# cancelled, one under its throttle or copying is reverted (executor.steps' cancel), one cooling
# down is done without its gate. The others are past their copy (verifying, unthrottling,
# electing) and finish; ended ones stay as they are.
CANCEL_STEPS: dict[MoveState, tuple[MoveState, str]] = {
    S.PENDING: (S.CANCELLED, "run cancelled before this move started"),
    S.THROTTLING: (S.CANCELLING, "cancelled by the operator"),
    S.SUBMITTED: (S.CANCELLING, "cancelled by the operator"),
    S.COPYING: (S.CANCELLING, "cancelled by the operator"),
    S.COOLING_DOWN: (S.DONE, "gate skipped: run cancelled"),
}


def on_cancel(state: MoveState) -> tuple[MoveState, str] | None:
    """The state (and reason) a move in `state` enters when the run is cancelled; None: it
    goes on as it is."""
    return CANCEL_STEPS.get(state)


def revert_listed(move: Move, adding: Iterable[int], replicas: Iterable[int]) -> bool:
    """A reassignment of `move`'s partition found in flight when the move is cancelled: revert
    it (True), or let it end (False) when it adds no replica and holds the move's current or
    target replicas, a reorder that copies nothing (the cancel then puts the order back)."""
    if any(True for _ in adding):
        return True
    return set(replicas) not in (set(move.current), set(move.target))


# Why a cancelled move ends done: its copy ended between the last poll and the cancel.
COMPLETED_BEFORE_CANCEL = (
    "its copy had completed before the cancel reached it: the data is in place, so the move "
    "stays done (a cancel stops copies in flight and copies nothing back)")


@dataclass(frozen=True, slots=True)
class CancelStep:
    """What a cancelled move's poll does once no reassignment of it is in flight: put a
    replica order back (a reassignment that copies nothing) and look again; or elect the
    preferred leader, restore the move's throttles and end in `ends` (None: look again next
    poll). `settling`: the poll was spent waiting for metadata to show the cancel (counted
    against the stall limit)."""

    reorder: tuple[int, ...] | None = None
    elect: bool = False
    ends: MoveState | None = None
    reason: str | None = None  # None: the move keeps its reason
    settling: bool = False


def after_revert(move: Move, *, submitted: bool, reverted_now: bool,
                 replicas: tuple[int, ...] | None, leader: int | None, idle_polls: int,
                 stall_intervals: int, elect_leaders: bool) -> CancelStep:
    """The rest of a cancel, from the partition as it is now (`replicas` None: gone).

    A copy that ended before the cancel reached it (not one this poll reverted) stays done:
    the order as planned first, then its preferred leader (with --elect-leaders). Otherwise
    Kafka's revert put the original replicas back in the in-flight order (target first),
    which changes the preferred leader: the order goes back as it was and the original leader
    is elected. Metadata can show the replicas in flight a moment after the revert: that is
    looked at again for up to `stall_intervals` polls. A move never submitted changed
    nothing: only its throttles are restored."""
    if (not reverted_now and replicas is not None and set(move.target) != set(move.current)
            and set(replicas) == set(move.target)):
        if replicas != move.target:
            return CancelStep(reorder=move.target)
        return CancelStep(elect=elect_leaders and leader != move.target[0], ends=S.DONE,
                          reason=COMPLETED_BEFORE_CANCEL)
    if not submitted or replicas is None:
        return CancelStep(ends=S.CANCELLED)
    if set(replicas) != set(move.current):
        in_flight = set(replicas) == set(move.current) | set(move.target) != set(move.target)
        if in_flight and idle_polls + 1 < stall_intervals:
            return CancelStep(settling=True)
        return CancelStep(ends=S.CANCELLED, settling=True)
    if replicas != move.current:
        return CancelStep(reorder=move.current)
    return CancelStep(elect=leader != move.current[0], ends=S.CANCELLED)


def run_outcome(cancelling: bool, states: Iterable[MoveState]) -> RunOutcome:
    """How the run ended: cancelled by the operator, completed (every move done), or stopped
    (a move failed or was cancelled by the executor, or moves were left; resumable)."""
    if cancelling:
        return RunOutcome.CANCELLED
    if all(state is S.DONE for state in states):
        return RunOutcome.COMPLETED
    return RunOutcome.STOPPED


@dataclass(frozen=True, slots=True)
class Overrun:
    """A move that, started now and copied at the cap, would end after the window: the
    seconds left in the window and the seconds its copy needs."""

    left_seconds: float
    copy_seconds: float


def overrun(bytes_moved: int, cap_bytes_per_sec: float, now: float,
            finish_by: float | None) -> Overrun | None:
    """Whether a move of `bytes_moved` started `now` overruns the window ending `finish_by`
    (None: no window, or it fits): the run then starts no further move."""
    if finish_by is None:
        return None
    copy_seconds = bytes_moved / cap_bytes_per_sec
    if now + copy_seconds <= finish_by:
        return None
    return Overrun(max(0.0, finish_by - now), copy_seconds)


def hands_over(state: MoveState, leadership_only: bool, already_handed: bool,
               bytes_left: int | None, cap_bytes_per_sec: float, lead_seconds: float,
               observed_rate: float | None = None) -> bool:
    """A copying move whose bytes left take at most `lead_seconds` passes its brokers to the
    next move now (once), so the receiver's quota sees one unbroken copy; a move that copies
    nothing, or whose bytes left are unknown, hands nothing over. The time left is reckoned at
    the copy's own mean rate when it runs under the cap (an SLO guard's step, a receiver it
    shares): at the cap, a copy at a third of it would hand over with three times the lead,
    and two copies would run side by side for most of it."""
    if state is not S.COPYING or leadership_only or already_handed or bytes_left is None:
        return False
    pace = (min(cap_bytes_per_sec, observed_rate) if observed_rate is not None
            and observed_rate > 0 else cap_bytes_per_sec)
    return bytes_left <= pace * lead_seconds


class Started(Enum):
    """What came of asking a move to start."""

    STARTED = "started"
    HELD_MOVE = "held: its brokers' network is not readable yet"  # other moves may start
    HELD_ALL = "held: metrics unavailable"  # nothing starts blind


class Turn(StrEnum):
    """What the starter does with the pending move it weighs (in the run's order)."""

    SKIP = "skip"  # leave it: a later move may start first
    STOP = "stop"  # start nothing more now (one at a time, the plan's order is kept)
    LEADERSHIPS = "leaderships"  # start the leadership-only moves from this one on, then stop
    HOLD = "hold"  # keep its ends for it while its receivers' quota windows clear, then skip


def turn_before_ends(*, slots: int, blocked: bool, leadership_only: bool, copying: bool,
                     one_at_a_time: bool) -> Turn | None:
    """Before its ends are read: no slot left, a broker of a failed move (left for `resume
    --retry-failed`), or a leadership-only move (they start together once no copy is in flight:
    their leadership changes move client traffic, not under a copy's gate). None: go on."""
    if slots <= 0:
        return Turn.STOP
    if blocked:
        return Turn.SKIP
    if leadership_only:
        if not copying:
            return Turn.LEADERSHIPS
        return Turn.STOP if one_at_a_time else Turn.SKIP
    return None


def turn_for_ends(*, free: bool, takes_over: bool, others_active: bool,
                  one_at_a_time: bool) -> Turn | None:
    """Its ends read: an end in another move's copy (`free` false) leaves it; one at a time it
    starts only when nothing else is in flight or it takes over a copy ending now. None: go
    on."""
    if free and not (one_at_a_time and others_active and not takes_over):
        return None
    return Turn.STOP if one_at_a_time else Turn.SKIP


def turn_for_window(*, dirty: bool, one_at_a_time: bool) -> Turn | None:
    """Its receivers' quota windows read: while one still holds a finished copy's bytes it
    waits (side by side, its ends are kept for it so that no later move takes them). None: go
    on."""
    if not dirty:
        return None
    return Turn.STOP if one_at_a_time else Turn.HOLD


def turn_after_start(started: Started, one_at_a_time: bool) -> Turn | None:
    """Asked to start: with metrics unavailable nothing starts blind (one at a time, a held
    move holds the order); a move held because its brokers are not scraped yet leaves the
    others to go on. None: it started."""
    if started is Started.HELD_ALL or (one_at_a_time and started is not Started.STARTED):
        return Turn.STOP
    if started is Started.HELD_MOVE:
        return Turn.SKIP
    return None
