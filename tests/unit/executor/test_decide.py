"""The pure step of a move, driven from a table: state and observation in, next state, action
and reason out."""

from __future__ import annotations

import pytest

from executor.decide import (
    COMPLETED_BEFORE_CANCEL,
    OFFLINE_POLLS,
    Action,
    CancelStep,
    Cooling,
    GateOutcome,
    Observation,
    Overrun,
    Started,
    Tracking,
    Turn,
    after_gate,
    after_revert,
    decide,
    hands_over,
    on_cancel,
    overrun,
    revert_listed,
    run_outcome,
    turn_after_start,
    turn_before_ends,
    turn_for_ends,
    turn_for_window,
    without_gate,
)
from executor.gates import GateDecision, GateVerdict
from executor.records import RunOutcome
from executor.state import MoveState
from planner.result import Move

S = MoveState
MOVE = Move("t", 0, (1, 2), (1, 3), 10_000_000)
STALL = 3
AT_REST = Tracking(last_progress=(500, (1, 2)), idle_polls=STALL - 1)

# (state, observation, tracking before, next state, action, a phrase of the reason)
TABLE = [
    (S.THROTTLING, Observation(), Tracking(), S.SUBMITTED, Action.NONE, ""),
    (S.THROTTLING, Observation(problems=("broker 3 follower rate is None",)), Tracking(),
     S.CANCELLING, Action.NONE, "throttle read back differs: broker 3 follower rate is None"),
    (S.SUBMITTED, Observation(replicas=(1, 2)), Tracking(), S.COPYING, Action.SUBMIT, ""),
    (S.SUBMITTED, Observation(listed=True, replicas=(1, 2)), Tracking(), S.COPYING,
     Action.NONE, ""),
    (S.SUBMITTED, Observation(replicas=(1, 3)), Tracking(), S.COPYING, Action.NONE, ""),
    (S.SUBMITTED, Observation(replicas=None), Tracking(), S.CANCELLING, Action.NONE,
     "the partition disappeared"),
    (S.SUBMITTED, Observation(replicas=(2, 4)), Tracking(), S.CANCELLING, Action.NONE,
     "replicas changed to [2, 4] outside this run"),
    (S.COPYING, Observation(listed=False), AT_REST, S.VERIFYING, Action.NONE, ""),
    (S.COPYING, Observation(listed=True, dead=(3,)), Tracking(), None, Action.NONE, ""),
    (S.COPYING, Observation(listed=True, dead=(3,)), Tracking(offline_polls=OFFLINE_POLLS - 1),
     S.CANCELLING, Action.NONE, "broker(s) [3] went offline during the move"),
    (S.COPYING, Observation(listed=True, progress=(900, (1, 2))), AT_REST, None, Action.NONE,
     ""),
    (S.COPYING, Observation(listed=True, progress=(500, (1, 2))), AT_REST, S.CANCELLING,
     Action.NONE, "no progress for 3 polls"),
    (S.VERIFYING, Observation(replicas=(1, 3), isr=(3, 1)), Tracking(), S.UNTHROTTLING,
     Action.NONE, ""),
    (S.VERIFYING, Observation(replicas=(1, 3), isr=(1,)), Tracking(), None, Action.NONE, ""),
    (S.VERIFYING, Observation(replicas=(1, 3), isr=(1,)), AT_REST, S.CANCELLING, Action.NONE,
     "replicas [1, 3] in place but ISR is [1]"),
    (S.VERIFYING, Observation(replicas=(1, 2)), AT_REST, S.CANCELLING, Action.NONE,
     "reassignment ended outside this run: cluster has [1, 2]"),
    # broker 1 kept its replica and died during the copy: the copy to 3 is done all the same
    (S.VERIFYING, Observation(replicas=(1, 3), isr=(3,)), Tracking(), S.UNTHROTTLING,
     Action.NONE, "broker(s) [1] kept their replica but are out of sync (offline?)"),
    (S.COPYING, Observation(listed=True, dead=(), progress=(900, (3,))), Tracking(), None,
     Action.NONE, ""),
    (S.UNTHROTTLING, Observation(), Tracking(), S.ELECTING, Action.NONE, ""),
    (S.UNTHROTTLING, Observation(problems=("broker 3: could not restore",)), Tracking(),
     S.FAILED, Action.NONE, "broker 3: could not restore; run `rebalance clear-throttles`"),
    (S.UNTHROTTLING, Observation(waiting=("broker 1: could not restore (it is offline)",)),
     Tracking(), S.ELECTING, Action.NONE, "broker 1: could not restore (it is offline): the "
     "partition is in place; `rebalance clear-throttles` puts that rate back"),
    (S.ELECTING, Observation(), Tracking(), S.COOLING_DOWN, Action.NONE, ""),
    (S.ELECTING, Observation(failure="timed out"), Tracking(), S.COOLING_DOWN, Action.NONE,
     "preferred leader election failed (timed out); leadership stays as is"),
]


@pytest.mark.parametrize(("state", "seen", "before", "next_state", "action", "phrase"), TABLE)
def test_the_step_table(state: MoveState, seen: Observation, before: Tracking,
                        next_state: MoveState | None, action: Action, phrase: str) -> None:
    step = decide(state, MOVE, seen, before, STALL)
    assert (step.next, step.action) == (next_state, action)
    assert phrase in step.reason and (phrase or not step.reason)


def test_progress_resets_the_idle_count_and_copy_polls_count_up() -> None:
    step = decide(S.COPYING, MOVE, Observation(listed=True, progress=(900, (1, 2))), AT_REST,
                  STALL)
    assert step.tracking == Tracking(last_progress=(900, (1, 2)), idle_polls=0, copy_polls=1)
    again = decide(S.COPYING, MOVE, Observation(listed=True, progress=(900, (1, 2))),
                   step.tracking, STALL)
    assert (again.tracking.idle_polls, again.tracking.copy_polls) == (1, 2)


def test_without_elections_unthrottling_goes_to_cooling_down() -> None:
    step = decide(S.UNTHROTTLING, MOVE, Observation(), Tracking(), STALL, elect_leaders=False)
    assert step.next is S.COOLING_DOWN


def test_states_with_rules_of_their_own_have_no_pure_step() -> None:
    for state in (S.PENDING, S.COOLING_DOWN, S.CANCELLING, S.DONE):
        with pytest.raises(ValueError, match="no pure step"):
            decide(state, MOVE, Observation(), Tracking(), STALL)


@pytest.mark.parametrize(("cooling", "reason"), [
    (Cooling(cancelled=True, leadership_only=True), "gate skipped: run cancelled"),
    (Cooling(leadership_only=True, handed_over_to="b-1"),
     "leadership only: it copied nothing, no gate"),
    (Cooling(handed_over_to="b-1", copy_pending=False), "handed over to b-1: its gate covers both"),
    (Cooling(copy_pending=False), "no move is left to start: gate not needed"),
    (Cooling(copy_pending=False, final_gate=True), None),
    (Cooling(), None),
])
def test_a_cooldown_skips_its_gate_only_when_nothing_needs_it(cooling: Cooling,
                                                             reason: str | None) -> None:
    assert without_gate(cooling) == reason


OPEN = GateDecision(GateVerdict.OPEN, "settled", streak=3)
HELD = GateDecision(GateVerdict.HOLD, "broker 3 net in 4.0 MB/s above its baseline")


@pytest.mark.parametrize(("decision", "left", "timeout", "outcome"), [
    (OPEN, 5.0, None, GateOutcome(False)),  # the cooldown is waited out, open or not
    (HELD, 5.0, 1.0, GateOutcome(False)),
    (OPEN, 0.0, None, GateOutcome(True)),
    (OPEN, -30.0, 10.0, GateOutcome(True)),  # open wins over a timeout passed meanwhile
    (HELD, -9.0, 10.0, GateOutcome(False)),
    (HELD, -600.0, None, GateOutcome(False)),  # no timeout: it waits
    (HELD, -10.0, 10.0, GateOutcome(
        True, "the gate after m-1 stayed closed for 10 s (broker 3 net in 4.0 MB/s above its "
              "baseline); stopping before the next move", stop=True)),
])
def test_after_its_gate_a_move_waits_is_done_or_stops_the_run(
        decision: GateDecision, left: float, timeout: float | None,
        outcome: GateOutcome) -> None:
    assert after_gate("m-1", decision, left, timeout) == outcome


def test_a_target_broker_is_offline_only_when_missing_several_polls_in_a_row() -> None:
    """One DescribeCluster answer without a live broker (another broker dying) cancels
    nothing; a broker missing OFFLINE_POLLS polls in a row does; seen back, the count starts
    again."""
    move = Move("t", 0, (1, 2), (1, 3), 1000)
    tracking = Tracking()
    for _ in range(OFFLINE_POLLS - 1):
        step = decide(S.COPYING, move, Observation(listed=True, dead=(3,)), tracking, 30)
        assert step.next is None
        tracking = step.tracking
    back = decide(S.COPYING, move, Observation(listed=True, progress=(10, (1, 2))), tracking, 30)
    assert back.next is None and back.tracking.offline_polls == 0
    tracking = back.tracking
    for _ in range(OFFLINE_POLLS):
        step = decide(S.COPYING, move, Observation(listed=True, dead=(3,)), tracking, 30)
        tracking = step.tracking
    assert step.next is S.CANCELLING and "[3] went offline" in step.reason


@pytest.mark.parametrize(("state", "step"), [
    (S.PENDING, (S.CANCELLED, "run cancelled before this move started")),
    (S.THROTTLING, (S.CANCELLING, "cancelled by the operator")),
    (S.SUBMITTED, (S.CANCELLING, "cancelled by the operator")),
    (S.COPYING, (S.CANCELLING, "cancelled by the operator")),
    (S.COOLING_DOWN, (S.DONE, "gate skipped: run cancelled")),
    (S.VERIFYING, None),  # past its copy: it finishes
    (S.UNTHROTTLING, None),
    (S.ELECTING, None),
    (S.CANCELLING, None),
    (S.DONE, None),
    (S.FAILED, None),
    (S.CANCELLED, None),
])
def test_a_cancel_reverts_what_copies_and_lets_what_copied_finish(
        state: MoveState, step: tuple[MoveState, str] | None) -> None:
    assert on_cancel(state) == step


@pytest.mark.parametrize(("adding", "replicas", "revert"), [
    ((3,), (1, 2, 3), True),  # the move's own copy
    ((), (1, 3), False),  # the target, no replica added: a reorder, let it end
    ((), (2, 1), False),  # the current replicas in another order
    ((), (2, 4), True),  # something else in flight on the partition
    ((4,), (1, 2, 4), True),
])
def test_a_reassignment_found_at_a_cancel_is_reverted_unless_it_only_reorders(
        adding: tuple[int, ...], replicas: tuple[int, ...], revert: bool) -> None:
    assert revert_listed(MOVE, adding, replicas) is revert


@pytest.mark.parametrize(("cancelling", "states", "outcome"), [
    (False, [S.DONE, S.DONE], RunOutcome.COMPLETED),
    (False, [], RunOutcome.COMPLETED),
    (False, [S.DONE, S.FAILED], RunOutcome.STOPPED),
    (False, [S.DONE, S.PENDING], RunOutcome.STOPPED),
    (False, [S.CANCELLED], RunOutcome.STOPPED),  # the executor cancelled a move
    (True, [S.DONE, S.DONE], RunOutcome.CANCELLED),  # the operator's cancel names the run
    (True, [S.CANCELLED, S.PENDING], RunOutcome.CANCELLED),
])
def test_how_a_run_ended(cancelling: bool, states: list[MoveState],
                         outcome: RunOutcome) -> None:
    assert run_outcome(cancelling, states) is outcome


@pytest.mark.parametrize(("bytes_moved", "now", "finish_by", "late"), [
    (10_000_000, 0.0, None, None),  # no window
    (10_000_000, 0.0, 10.0, None),  # ends just as the window does
    (10_000_000, 0.5, 10.0, Overrun(9.5, 10.0)),
    (10_000_000, 12.0, 10.0, Overrun(0.0, 10.0)),  # the window is over
    (0, 10.0, 10.0, None),  # copies nothing
])
def test_a_move_that_would_end_after_the_window_overruns_it(
        bytes_moved: int, now: float, finish_by: float | None, late: Overrun | None) -> None:
    assert overrun(bytes_moved, 1_000_000, now, finish_by) == late


@pytest.mark.parametrize(("state", "leadership", "handed", "left", "hands"), [
    (S.COPYING, False, False, 2_000_000, True),  # 2 s at the cap, within the lead
    (S.COPYING, False, False, 2_000_001, False),
    (S.COPYING, False, False, 0, True),
    (S.COPYING, False, False, None, False),  # no progress read yet
    (S.COPYING, False, True, 0, False),  # handed over once already
    (S.COPYING, True, False, 0, False),  # copies nothing
    (S.SUBMITTED, False, False, 0, False),
    (S.VERIFYING, False, False, 0, False),
])
def test_a_copy_ending_within_the_lead_hands_its_brokers_over(
        state: MoveState, leadership: bool, handed: bool, left: int | None,
        hands: bool) -> None:
    assert hands_over(state, leadership, handed, left, 1_000_000, 2.0) is hands


@pytest.mark.parametrize(("left", "observed", "hands"), [
    (2_000_000, None, True),  # no rate seen yet: reckoned at the cap
    (2_000_000, 3_000_000, True),  # a burst above the cap is reckoned at the cap
    (2_000_000, 400_000, False),  # at 40% of the cap it has 5 s to go, not 2
    (800_000, 400_000, True),  # 2 s at its own pace
    (800_001, 400_000, False),
    (2_000_000, 0.0, True),  # no byte seen: the cap
])
def test_a_copy_under_the_cap_is_reckoned_at_its_own_pace(
        left: int, observed: float | None, hands: bool) -> None:
    """A copy held under the cap (an SLO guard's step, a shared receiver) handed over as if it
    ran at the cap would run beside the next move for most of its tail."""
    assert hands_over(S.COPYING, False, False, left, 1_000_000, 2.0, observed) is hands


# Which pending moves start: each check in the starter's order, one at a time (1) and side by
# side (N). None: the move goes on to the next check.
@pytest.mark.parametrize(("slots", "blocked", "leadership", "copying", "one", "turn"), [
    (0, False, False, False, True, Turn.STOP),  # no slot left
    (0, False, False, False, False, Turn.STOP),
    (1, True, False, False, True, Turn.SKIP),  # a failed move's broker: left for --retry-failed
    (1, True, False, False, False, Turn.SKIP),
    (1, False, True, False, True, Turn.LEADERSHIPS),  # no copy in flight: the batch starts
    (1, False, True, False, False, Turn.LEADERSHIPS),
    (1, False, True, True, True, Turn.STOP),  # under a copy: one at a time keeps the order
    (1, False, True, True, False, Turn.SKIP),  # side by side: a copy behind it may start
    (1, False, False, True, True, None),
    (2, False, False, False, False, None),
])
def test_before_its_ends_are_read(slots: int, blocked: bool, leadership: bool, copying: bool,
                                  one: bool, turn: Turn | None) -> None:
    assert turn_before_ends(slots=slots, blocked=blocked, leadership_only=leadership,
                            copying=copying, one_at_a_time=one) is turn


@pytest.mark.parametrize(("free", "takes_over", "active", "one", "turn"), [
    (False, False, False, True, Turn.STOP),  # an end busy: one at a time waits in order
    (False, False, True, False, Turn.SKIP),  # side by side: a later, free move may go first
    (True, False, True, True, Turn.STOP),  # one at a time, another move still copies
    (True, True, True, True, None),  # ... unless this one takes its ending copy over
    (True, False, False, True, None),  # nothing in flight
    (True, False, True, False, None),  # side by side, free ends are enough
])
def test_for_its_ends(free: bool, takes_over: bool, active: bool, one: bool,
                      turn: Turn | None) -> None:
    assert turn_for_ends(free=free, takes_over=takes_over, others_active=active,
                         one_at_a_time=one) is turn


@pytest.mark.parametrize(("dirty", "one", "turn"), [
    (True, True, Turn.STOP),  # one at a time: it waits, and so does everything after it
    (True, False, Turn.HOLD),  # side by side: its ends are kept for it, others go on
    (False, True, None),
    (False, False, None),
])
def test_for_its_receivers_quota_windows(dirty: bool, one: bool, turn: Turn | None) -> None:
    assert turn_for_window(dirty=dirty, one_at_a_time=one) is turn


@pytest.mark.parametrize(("started", "one", "turn"), [
    (Started.STARTED, True, None),
    (Started.STARTED, False, None),
    (Started.HELD_ALL, True, Turn.STOP),  # metrics unavailable: nothing starts blind
    (Started.HELD_ALL, False, Turn.STOP),
    (Started.HELD_MOVE, True, Turn.STOP),  # its brokers not scraped yet: the order holds
    (Started.HELD_MOVE, False, Turn.SKIP),  # ... side by side, moves elsewhere go on
])
def test_after_asking_it_to_start(started: Started, one: bool, turn: Turn | None) -> None:
    assert turn_after_start(started, one) is turn


# The rest of a cancel once nothing of the move is in flight; MOVE copies broker 2's replica
# to broker 3: current (1, 2), target (1, 3). Kafka's revert leaves the in-flight order.
_C, _D = MoveState.CANCELLED, MoveState.DONE


@pytest.mark.parametrize(("submitted", "reverted", "replicas", "leader", "idle", "step"), [
    # reverted in the planned order, the original leader leads: throttles back, cancelled
    (True, True, (1, 2), 1, 0, CancelStep(elect=False, ends=_C)),
    # ... another leader leads: the original one is elected first
    (True, True, (1, 2), 2, 0, CancelStep(elect=True, ends=_C)),
    # reverted in another order: the order is put back, looked at next poll
    (True, True, (2, 1), 2, 0, CancelStep(reorder=(1, 2))),
    # metadata still shows the replicas in flight: looked at again while polls are left
    (True, True, (1, 3, 2), 1, 0, CancelStep(settling=True)),
    (True, True, (1, 3, 2), 1, 4, CancelStep(ends=_C, settling=True)),  # the 5th poll: ends
    # replicas neither current nor in flight (changed outside the run): throttles back, ended
    (True, True, (1, 4), 1, 0, CancelStep(ends=_C, settling=True)),
    # never submitted: only its throttles are restored
    (False, False, (1, 2), 2, 0, CancelStep(ends=_C)),
    # the partition is gone
    (True, False, None, None, 0, CancelStep(ends=_C)),
    # the copy ended before the cancel reached it: done, the planned order first
    (True, False, (3, 1), 3, 0, CancelStep(reorder=(1, 3))),
    (True, False, (1, 3), 3, 0, CancelStep(elect=True, ends=_D, reason=COMPLETED_BEFORE_CANCEL)),
    (True, False, (1, 3), 1, 0, CancelStep(elect=False, ends=_D,
                                           reason=COMPLETED_BEFORE_CANCEL)),
])
def test_after_the_revert_a_cancel_puts_order_leader_and_throttles_back(
        submitted: bool, reverted: bool, replicas: tuple[int, ...] | None, leader: int | None,
        idle: int, step: CancelStep) -> None:
    assert after_revert(MOVE, submitted=submitted, reverted_now=reverted, replicas=replicas,
                        leader=leader, idle_polls=idle, stall_intervals=5,
                        elect_leaders=True) == step


def test_a_copy_done_before_the_cancel_keeps_its_leader_without_elections() -> None:
    assert after_revert(MOVE, submitted=True, reverted_now=False, replicas=(1, 3), leader=3,
                        idle_polls=0, stall_intervals=5, elect_leaders=False) == CancelStep(
        ends=_D, reason=COMPLETED_BEFORE_CANCEL)
