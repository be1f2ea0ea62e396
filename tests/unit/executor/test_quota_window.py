"""The quota window: after a move, the next one waits until Kafka's replication quota window
has forgotten the previous move's traffic (it overlaps the cooldown, it does not add to it)."""

from __future__ import annotations

import itertools

import pytest
from executor_fakes import World, make_world

from executor.config import EventKind, ExecutorConfig
from executor.runner import Executor
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
    config = ExecutorConfig(1_000_000, cooldown_seconds=cooldown, quota_window_seconds=window)
    assert config.settle_seconds == settle
    assert config.summary()["quota_window_seconds"] == window


def test_negative_window_is_refused() -> None:
    with pytest.raises(InputError, match="quota window"):
        ExecutorConfig(1_000_000, quota_window_seconds=-1)


def test_the_last_move_does_not_wait_for_the_window() -> None:
    times = _run(quota_window_seconds=11.0)
    last = max({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    assert times[(last, "done")] - times[(last, "cooling_down")] < 11.0
