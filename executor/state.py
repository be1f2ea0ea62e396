"""The life of one move as an explicit state machine: an enum and a table of allowed transitions.

Entering a state is journaled before that state's side effect runs, so the state a move was in
when the process died says exactly which (idempotent) step to redo on resume.
"""

from __future__ import annotations

from enum import StrEnum

from kafka_rebalance.core.errors import ExecutionError


class MoveState(StrEnum):
    """Where one move stands. Each non-terminal state names the step it is about to take."""

    PENDING = "pending"  # not started; nothing touched
    THROTTLING = "throttling"  # prior configs recorded; setting and reading back throttles
    SUBMITTED = "submitted"  # throttles read back; submitting the reassignment
    COPYING = "copying"  # reassignment in flight; following progress
    VERIFYING = "verifying"  # reassignment gone from the list; checking replicas and ISR
    UNTHROTTLING = "unthrottling"  # data in place; removing exactly the throttles it added
    ELECTING = "electing"  # throttles restored; electing the preferred leader
    COOLING_DOWN = "cooling_down"  # waiting for the gate on its source and target brokers
    DONE = "done"
    CANCELLING = "cancelling"  # reverting the reassignment (KIP-455) and restoring throttles
    CANCELLED = "cancelled"  # reverted; nothing of this move is left on the cluster
    FAILED = "failed"  # stopped and could not clean up fully; the journal says what is left


TERMINAL: frozenset[MoveState] = frozenset({MoveState.DONE, MoveState.CANCELLED, MoveState.FAILED})

# States in which this move's throttles may be present on the cluster.
THROTTLES_MAY_BE_SET: frozenset[MoveState] = frozenset({
    MoveState.THROTTLING, MoveState.SUBMITTED, MoveState.COPYING, MoveState.VERIFYING,
    MoveState.UNTHROTTLING, MoveState.CANCELLING,
})

# States in which this move's reassignment may be in flight on the cluster.
REASSIGNMENT_MAY_BE_IN_FLIGHT: frozenset[MoveState] = frozenset({
    MoveState.SUBMITTED, MoveState.COPYING, MoveState.CANCELLING,
})

_S = MoveState
TRANSITIONS: dict[MoveState, frozenset[MoveState]] = {
    _S.PENDING: frozenset({_S.THROTTLING, _S.CANCELLED}),
    _S.THROTTLING: frozenset({_S.SUBMITTED, _S.CANCELLING, _S.FAILED}),
    _S.SUBMITTED: frozenset({_S.COPYING, _S.CANCELLING, _S.FAILED}),
    _S.COPYING: frozenset({_S.VERIFYING, _S.CANCELLING, _S.FAILED}),
    _S.VERIFYING: frozenset({_S.UNTHROTTLING, _S.CANCELLING, _S.FAILED}),
    _S.UNTHROTTLING: frozenset({_S.ELECTING, _S.COOLING_DOWN, _S.FAILED}),
    _S.ELECTING: frozenset({_S.COOLING_DOWN, _S.FAILED}),
    _S.COOLING_DOWN: frozenset({_S.DONE}),
    # DONE: the reassignment completed before the cancel reached it; the data is in place
    _S.CANCELLING: frozenset({_S.CANCELLED, _S.DONE, _S.FAILED}),
    _S.DONE: frozenset(),
    _S.CANCELLED: frozenset(),
    _S.FAILED: frozenset(),
}


class IllegalTransition(ExecutionError):
    """A move was asked to go from one state to another the table does not allow."""


def can_transition(current: MoveState, target: MoveState) -> bool:
    """True when the table allows `current -> target`."""
    return target in TRANSITIONS[current]


def transition(move_name: str, current: MoveState, target: MoveState) -> MoveState:
    """`target` when the table allows it; otherwise raise IllegalTransition naming the move."""
    if not can_transition(current, target):
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[current])) or "none (terminal)"
        raise IllegalTransition(
            f"move {move_name}: illegal state change {current.value} -> {target.value} "
            f"(allowed from {current.value}: {allowed}); the journal may be corrupt or edited"
        )
    return target
