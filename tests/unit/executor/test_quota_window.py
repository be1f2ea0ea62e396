"""Kafka's replication quota window: a move into a broker whose window still holds a copy's
bytes waits for the window, unless it takes that broker over from a copy ending now; the
window is the one the brokers describe, unless the operator asks for a longer one
(executor.flows)."""

from __future__ import annotations

import itertools

import pytest

from executor.config import EventKind, ExecutorConfig
from executor.flows import Direction, QuotaWindows, choose_quota_window, move_ends
from executor.records import RunOutcome
from executor.runner import Executor
from kafka_rebalance.core.errors import InputError
from planner.result import Move
from tests.unit.executor.fakes import MB, FakeClock, World, make_world


def _state_times(world: World) -> dict[tuple[str, str], float]:
    """When each (move, state) was journaled, by the fake clock."""
    return {(r["move"], r["state"]): float(r["at"]) for r in world.sink.records
            if r.get("kind") == "state"}


def _run(moves: list[Move] | None = None, **config: float) -> tuple[World, dict[tuple[str, str],
                                                                             float]]:
    world = make_world(moves, **config)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert not world.messages(EventKind.HOLD)
    return world, _state_times(world)


def test_a_move_with_a_clean_end_starts_as_soon_as_the_previous_is_done() -> None:
    """The standard moves never send from, or receive on, both ends of an earlier copy, and
    Prometheus shows no copy into any broker before the run: no move waits for the window."""
    world, times = _run(quota_window_seconds=11.0)
    order = ["orders-0", "orders-1", "events-0"]
    for previous, following in itertools.pairwise(order):
        assert times[(following, "throttling")] - times[(previous, "done")] < 1.5
    assert not [m for m in world.messages(EventKind.NOTE) if "quota window" in m]


def test_a_run_waits_a_window_only_for_receivers_it_cannot_prove_clean() -> None:
    """Another run (or Kafka's tool) may have copied into the same brokers a moment ago: a
    receiver Prometheus saw receiving copies within the window, or any receiver when
    Prometheus cannot answer, waits one window before its first copy; the others start at
    once."""
    start = FakeClock().now()  # every world's clock starts there
    _, clean = _run(quota_window_seconds=11.0)
    assert clean[("orders-0", "throttling")] - start < 1.0
    world = make_world(quota_window_seconds=11.0)
    world.metrics.recent_copies[3] = 500_000.0  # orders-0 copies into broker 3
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter).run()
    waited = _state_times(world)
    assert waited[("orders-0", "throttling")] - start >= 11.0
    notes = world.messages(EventKind.NOTE)
    assert any("broker(s) [3] received copies within the last 16 s" in n for n in notes)
    world = make_world(quota_window_seconds=11.0)
    world.metrics.down, world.metrics.down_until = True, start + 0.5  # unreadable at the start
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter).run()
    assert _state_times(world)[("orders-0", "throttling")] - start >= 11.0
    _, without = _run(quota_window_seconds=0.0)
    assert without[("orders-0", "throttling")] - start < 1.0


def test_a_copy_into_a_broker_that_just_received_one_waits_for_the_window() -> None:
    """Broker 3 received the first copy; the third copies into 3 again after an unrelated move,
    with nothing to take over: it starts a window after the first copy's bytes stopped."""
    moves = [Move("orders", 0, (1, 2), (3, 2), 30 * MB), Move("orders", 1, (2, 1), (2, 4), MB),
             Move("orders", 2, (4, 1), (3, 1), 10 * MB)]
    world, times = _run(moves, quota_window_seconds=11.0)
    first_flow_end = times[("orders-0", "verifying")]
    assert times[("orders-2", "throttling")] - first_flow_end >= 11.0
    assert times[("orders-2", "throttling")] - first_flow_end < 11.0 + 2.5
    notes = [m for m in world.messages(EventKind.NOTE) if "quota window" in m]
    assert [n.split(" waits")[0] for n in notes] == ["orders-2"]
    assert "broker 3 may have received a copy within the last 11 s" in notes[0]


def test_a_move_into_the_same_broker_takes_it_over_without_a_gap() -> None:
    """The second move copies from broker 1 into broker 3 too: it starts while the first copy
    ends, so broker 3's quota sees one unbroken copy, and the first move's gate passes to it."""
    moves = [Move("orders", 0, (1, 2), (3, 2), 60 * MB), Move("orders", 1, (1, 4), (3, 4), 60 * MB)]
    world, times = _run(moves, quota_window_seconds=11.0)
    assert times[("orders-1", "throttling")] < times[("orders-0", "verifying")]
    done = [r for r in world.sink.records if r.get("move") == "orders-0"
            and r.get("state") == "done"]
    assert done[0]["reason"] == "handed over to orders-1: its gate covers both"
    assert any("orders-1 takes over from orders-0 as its copy ends: broker 1 out, broker 3 in"
               in m
               for m in world.messages(EventKind.NOTE))
    # the two copies took about the time of one 120 MB copy at the cap: no gap, no gate between
    copying = times[("orders-1", "verifying")] - times[("orders-0", "copying")]
    assert 12.0 <= copying <= 12.0 + 2.0


def test_without_a_window_nothing_waits() -> None:
    moves = [Move("orders", 0, (1, 2), (3, 2), 30 * MB), Move("orders", 1, (2, 1), (2, 4), MB),
             Move("orders", 2, (4, 1), (3, 1), 10 * MB)]
    _, times = _run(moves, quota_window_seconds=0.0)
    assert times[("orders-2", "throttling")] - times[("orders-1", "done")] < 1.5


def test_a_leadership_only_move_never_waits() -> None:
    """Reordering replicas copies nothing, so no throttled bytes can burst."""
    moves = [Move("orders", 0, (1, 2), (3, 2), 30 * MB), Move("orders", 1, (3, 1), (1, 3), 20 * MB)]
    _, times = _run(moves, quota_window_seconds=11.0)
    assert times[("orders-1", "throttling")] - times[("orders-0", "done")] < 1.5


def test_a_run_taken_over_assumes_every_window_in_use() -> None:
    """After a crash the last process may have been copying a moment ago."""
    windows = QuotaWindows(11.0, since=100.0)
    move = Move("orders", 0, (1, 2), (3, 2), 30 * MB)
    ends = move_ends(move, 1)
    assert windows.dirty_receivers(move, ends, 105.0) == [(3, Direction.IN)]
    assert windows.wait_left([(3, Direction.IN)], 105.0) == pytest.approx(6.0)
    assert windows.dirty_receivers(move, ends, 111.0) == []


def test_only_the_receivers_window_counts() -> None:
    """Measured on the sandbox: a clean receiver holds the cap even from a sender that has
    just sent; a receiver that just received does not, whatever the sender."""
    windows = QuotaWindows(11.0, since=0.0)
    move = Move("orders", 0, (1, 2), (3, 4), 30 * MB)  # 1 sends to 3 and 4
    ends = move_ends(move, 1)
    windows.use([(1, Direction.OUT)], 100.0)
    assert windows.dirty_receivers(move, ends, 105.0) == []
    windows.use([(3, Direction.IN)], 100.0)
    assert windows.dirty_receivers(move, ends, 105.0) == [(3, Direction.IN)]
    assert windows.dirty_receivers(move, ends, 105.0, hot=frozenset({(3, Direction.IN)})) == []


def test_the_last_move_skips_the_gate_unless_asked() -> None:
    _, times = _run(quota_window_seconds=11.0, cooldown_seconds=5.0)
    last = max({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    assert times[(last, "done")] == times[(last, "cooling_down")]
    _, kept = _run(quota_window_seconds=11.0, cooldown_seconds=5.0, final_gate=True)
    waited = kept[(last, "done")] - kept[(last, "cooling_down")]
    assert 5.0 <= waited < 11.0  # the cooldown, not the quota window: no move follows


def test_negative_window_is_refused() -> None:
    with pytest.raises(InputError, match="quota window"):
        ExecutorConfig(max_bytes_per_sec=1_000_000, quota_window_seconds=-1)


def test_a_broker_handed_over_is_the_next_moves_to_hand_over_again() -> None:
    """Q took broker 3 over from P; while P's tail still copies, R takes 3 (and 4) over from Q
    as Q ends: P no longer holds what it handed over."""
    moves = [Move("orders", 0, (1, 2), (3, 2), 60 * MB), Move("orders", 1, (4, 2), (3, 2), 10 * MB),
             Move("orders", 2, (4, 1), (3, 1), 10 * MB)]
    world, times = _run(moves, quota_window_seconds=11.0)
    assert times[("orders-1", "throttling")] < times[("orders-0", "verifying")]
    assert times[("orders-2", "throttling")] < times[("orders-1", "verifying")]
    assert any("orders-2 takes over from orders-1" in m for m in world.messages(EventKind.NOTE))


def test_a_taker_cancelled_by_its_first_steps_takes_nothing_over() -> None:
    """Q would take broker 3 over from P as P ends, but someone moved Q's partition since the
    plan: Q is cancelled as it starts, and the log does not go on to say it took 3 over."""
    from executor.config import Event

    moves = [Move("orders", 0, (1, 2), (3, 2), 60 * MB), Move("orders", 1, (4, 2), (3, 2), 10 * MB)]
    world = make_world(moves, quota_window_seconds=11.0)

    def move_q(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-0" and e.bytes_done >= 30 * MB:
            part = w.admin.parts[moves[1].key]
            part.replicas = part.isr = (4, 1)
            w.hooks.remove(move_q)
    world.hooks.append(move_q)
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter).run()
    said = world.messages(EventKind.NOTE) + world.messages(EventKind.STATE)
    assert any("orders-1: cancelling (replicas changed to [4, 1] outside this run)" in m
               for m in said), said
    assert not any("takes over" in m for m in said), said


REPEATED_RECEIVER = [Move("orders", 0, (1, 2), (3, 2), 30 * MB),
                     Move("orders", 1, (2, 1), (2, 4), MB),
                     Move("orders", 2, (4, 1), (3, 1), 10 * MB)]


def _run_on_brokers(window: dict[int, float], asked: float | None
                    ) -> tuple[World, dict[tuple[str, str], float]]:
    """A run of REPEATED_RECEIVER whose brokers describe `window` as their quota window."""
    world = make_world(REPEATED_RECEIVER, quota_window_seconds=asked)
    world.admin.quota_window_seconds = window
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.COMPLETED
    return world, _state_times(world)


def _header_window(world: World) -> float:
    return float(world.sink.records[0]["settings"]["quota_window_seconds"])


def test_without_a_window_asked_the_run_waits_the_one_its_brokers_describe() -> None:
    world, times = _run_on_brokers({1: 4.0, 2: 4.0, 3: 4.0, 4: 4.0}, None)
    waited = times[("orders-2", "throttling")] - times[("orders-0", "verifying")]
    assert 4.0 <= waited < 4.0 + 2.5
    assert _header_window(world) == 4.0  # a resume keeps it
    assert not [m for m in world.messages(EventKind.NOTE) if "--quota-window" in m]


def test_a_shorter_window_asked_for_is_raised_to_the_brokers_and_said() -> None:
    """Asking 3 s of brokers that measure their quota over 11 s would let the third copy make
    up 8 s of the cap at full speed (seen on the sandbox): the run waits the brokers' 11 s."""
    world, times = _run_on_brokers({1: 11.0, 2: 11.0, 3: 11.0, 4: 7.0}, 3.0)
    assert times[("orders-2", "throttling")] - times[("orders-0", "verifying")] >= 11.0
    assert _header_window(world) == 11.0
    notes = [m for m in world.messages(EventKind.NOTE) if "--quota-window" in m]
    assert len(notes) == 1 and "broker(s) 1, 2, 3 (11 s" in notes[0], notes


def test_a_broker_the_plan_does_not_touch_does_not_set_the_window() -> None:
    """Brokers 1-4 carry the plan; broker 9, with a 60 s window, carries none of it."""
    world = make_world(REPEATED_RECEIVER, quota_window_seconds=None)
    world.admin.broker_ids = [*world.admin.broker_ids, 9]
    world.admin.quota_window_seconds = {1: 4.0, 2: 4.0, 3: 4.0, 4: 4.0, 9: 60.0}
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter)
    assert _header_window(world) == 4.0


@pytest.mark.parametrize(("asked", "described", "seconds", "said"), [
    (None, {}, 11.0, None),  # the brokers do not say: Kafka's default
    (None, {1: 3.0, 2: 5.0}, 5.0, None),  # the longest of them
    (3.0, {1: 11.0}, 11.0, "shorter than"),  # raised, and said
    (20.0, {1: 11.0}, 20.0, None),  # a longer wait is the operator's to choose
    (3.0, {}, 3.0, None),  # nothing to hold it against
    (0.0, {1: 11.0}, 0.0, "do not wait"),  # turned off, and said
    (0.0, {}, 0.0, None),
])
def test_the_window_chosen(asked: float | None, described: dict[int, float], seconds: float,
                           said: str | None) -> None:
    choice = choose_quota_window(asked, described, 11.0)
    assert choice.seconds == seconds
    assert (choice.note is None) if said is None else (said in (choice.note or "")), choice
