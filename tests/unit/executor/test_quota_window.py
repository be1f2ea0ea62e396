"""The quota window: after a move, the next one waits until Kafka's replication quota window
has forgotten the previous move's traffic (it overlaps the cooldown, it does not add to it)."""

from __future__ import annotations

import itertools

import pytest

from executor.config import EventKind, ExecutorConfig
from executor.runner import Executor
from tests.unit.executor.fakes import World, make_world
from topology.errors import InputError


def _state_times(world: World) -> dict[tuple[str, str], float]:
    """When each (move, state) was journaled, by the fake clock."""
    return {(r["move"], r["state"]): float(r["at"]) for r in world.sink.records
            if r.get("kind") == "state"}


def _run(**config: float) -> dict[tuple[str, str], float]:
    world = make_world(**config)
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter).run()
    assert not world.messages(EventKind.HOLD)
    return _state_times(world)


def test_next_move_waits_for_the_quota_window() -> None:
    times = _run(quota_window_seconds=11.0)
    moves = sorted({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    for previous, following in itertools.pairwise(moves):
        assert times[(following, "throttling")] - times[(previous, "cooling_down")] >= 11.0


@pytest.mark.parametrize(("cooldown", "window", "settle"), [(0, 0, 0), (5, 11, 11), (20, 11, 20)])
def test_window_and_cooldown_overlap(cooldown: float, window: float, settle: float) -> None:
    config = ExecutorConfig(max_bytes_per_sec=1_000_000, cooldown_seconds=cooldown,
                            quota_window_seconds=window)
    assert config.settle_seconds == settle
    assert config.to_journal()["quota_window_seconds"] == window


def test_negative_window_is_refused() -> None:
    with pytest.raises(InputError, match="quota window"):
        ExecutorConfig(max_bytes_per_sec=1_000_000, quota_window_seconds=-1)


def test_the_last_move_does_not_wait_for_the_window() -> None:
    times = _run(quota_window_seconds=11.0)
    last = max({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    assert times[(last, "done")] - times[(last, "cooling_down")] < 11.0


def test_gate_samples_during_the_window_so_a_settled_cluster_opens_when_it_ends() -> None:
    """The gate's consecutive samples are taken while the window runs: no extra polls after."""
    times = _run(quota_window_seconds=11.0)
    moves = sorted({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    for move in moves[:-1]:
        assert times[(move, "done")] - times[(move, "cooling_down")] == pytest.approx(11.0, abs=0.5)


def test_an_unsettled_sample_during_the_window_still_counts() -> None:
    """A sample above the baseline late in the window resets the streak: the gate opens only
    after `consecutive` settled samples, even once the window is over."""
    world = make_world(quota_window_seconds=11.0)
    t0: list[float] = []

    def noisy(w: World, e: object) -> None:
        if getattr(e, "message", "") == "orders-0: cooling_down":
            t0.append(w.clock.now())
        if t0 and w.clock.now() - t0[0] >= 10:  # busy in the window's last second
            w.metrics.extra[3] = 50 * 1_000_000 if w.clock.now() - t0[0] < 11 else 0
    world.hooks.append(noisy)
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter).run()
    times = _state_times(world)
    # consecutive=2 in the fake world: the busy sample at 10-11 s means 2 more after it
    assert times[("orders-0", "done")] - times[("orders-0", "cooling_down")] >= 12.0


def test_the_last_move_skips_the_gate_unless_asked() -> None:
    times = _run(quota_window_seconds=11.0, cooldown_seconds=5.0)
    last = max({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    assert times[(last, "done")] == times[(last, "cooling_down")]
    kept = _run(quota_window_seconds=11.0, cooldown_seconds=5.0, final_gate=True)
    waited = kept[(last, "done")] - kept[(last, "cooling_down")]
    assert 5.0 <= waited < 11.0  # the cooldown, not the quota window: no move follows


def test_a_leadership_only_move_does_not_wait_for_the_window() -> None:
    """Reordering replicas copies nothing, so no throttled bytes linger in Kafka's window."""
    from planner.result import Move
    from tests.unit.executor.fakes import MB

    moves = [Move("orders", 0, (1, 2), (2, 1), 30 * MB), Move("orders", 1, (2, 3), (2, 4), 20 * MB),
             Move("events", 0, (3, 1), (1, 4), 10 * MB)]
    world = make_world(moves, quota_window_seconds=11.0)
    Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    times = _state_times(world)
    assert times[("orders-1", "throttling")] - times[("orders-0", "cooling_down")] < 11.0
    assert times[("events-0", "throttling")] - times[("orders-1", "cooling_down")] >= 11.0
