"""The executor's own Prometheus metrics follow the run."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from executor.config import Event, EventKind
from executor.exporter import ExecutorMetrics
from executor.runner import Executor
from tests.unit.executor.fakes import MB, make_world


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels or None)


def test_metrics_track_states_progress_and_holds() -> None:
    world = make_world()
    registry = CollectorRegistry()
    exporter = ExecutorMetrics(registry, 10 * MB)
    snapshots: list[tuple[float | None, float | None]] = []

    def both(event: Event) -> None:
        exporter(event)
        world.reporter(event)
        if event.kind is EventKind.PROGRESS and event.move == "orders-0":
            snapshots.append((value(registry, "rebalance_moves", state="copying"),
                              value(registry, "rebalance_move_copied_bytes", move="orders-0")))
    world.metrics.down, world.metrics.down_until = True, world.clock.now() + 3
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=both).run()
    assert value(registry, "rebalance_moves", state="done") == 3
    assert value(registry, "rebalance_moves", state="copying") == 0
    assert value(registry, "rebalance_plan_moves") == 3
    assert value(registry, "rebalance_holds_total") == 3
    assert value(registry, "rebalance_throttle_cap_bytes_per_second") == 10 * MB
    assert value(registry, "rebalance_gate_waiting") == 0
    assert value(registry, "rebalance_move_copied_bytes", move="orders-0") is None
    assert snapshots[0][0] == 1
    copied = [s[1] or 0 for s in snapshots]
    assert copied == sorted(copied) and copied[-1] > 0


def test_gate_waiting_gauge() -> None:
    registry = CollectorRegistry()
    exporter = ExecutorMetrics(registry, 1)
    exporter(Event(EventKind.GATE, "gate after a-0: wait, ...", "a-0", state="wait"))
    assert value(registry, "rebalance_gate_waiting") == 1
    exporter(Event(EventKind.GATE, "gate after a-0: open, ...", "a-0", state="open"))
    assert value(registry, "rebalance_gate_waiting") == 0


