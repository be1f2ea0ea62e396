"""The move state machine: the transition table is the only way states change."""

from __future__ import annotations

import itertools

import pytest

from executor.state import (
    TERMINAL,
    TRANSITIONS,
    IllegalTransition,
    MoveState,
    can_transition,
    transition,
)
from kafka_rebalance.core.errors import ExecutionError

S = MoveState


def test_every_state_has_a_row() -> None:
    assert set(TRANSITIONS) == set(MoveState)


def test_terminal_states_have_no_exit() -> None:
    for state in TERMINAL:
        assert TRANSITIONS[state] == frozenset()
    assert {S.DONE, S.CANCELLED, S.FAILED} == TERMINAL


def test_happy_path_is_allowed() -> None:
    path = [S.PENDING, S.THROTTLING, S.SUBMITTED, S.COPYING, S.VERIFYING, S.UNTHROTTLING,
            S.ELECTING, S.COOLING_DOWN, S.DONE]
    for a, b in itertools.pairwise(path):
        assert transition("t-0", a, b) is b


def test_cancel_path_is_allowed() -> None:
    for start in (S.THROTTLING, S.SUBMITTED, S.COPYING, S.VERIFYING):
        assert can_transition(start, S.CANCELLING)
    assert can_transition(S.CANCELLING, S.CANCELLED)


@pytest.mark.parametrize(("a", "b"), [
    (S.PENDING, S.SUBMITTED),  # no move starts before its throttle is set and read back
    (S.PENDING, S.COPYING),
    (S.THROTTLING, S.COPYING),
    (S.COPYING, S.DONE),  # throttles must be removed first
    (S.COPYING, S.UNTHROTTLING),  # must verify first
    (S.UNTHROTTLING, S.CANCELLING),  # data already moved: cannot be cancelled
    (S.DONE, S.PENDING),
    (S.CANCELLED, S.THROTTLING),
    (S.FAILED, S.CANCELLING),
    (S.COOLING_DOWN, S.FAILED),
])
def test_illegal_transitions_raise(a: MoveState, b: MoveState) -> None:
    assert not can_transition(a, b)
    with pytest.raises(IllegalTransition, match=f"t-3: illegal state change {a.value}"):
        transition("t-3", a, b)


def test_illegal_transition_is_an_execution_error() -> None:
    with pytest.raises(ExecutionError, match="allowed from done: none"):
        transition("t-0", S.DONE, S.FAILED)


def test_every_non_terminal_state_can_reach_a_terminal_state() -> None:
    for start in MoveState:
        seen = {start}
        frontier = [start]
        while frontier:
            for nxt in TRANSITIONS[frontier.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        assert seen & TERMINAL, start
