"""Optional Prometheus metrics of the executor itself: a Reporter feeding prometheus-client.

The CLI decides whether and where to serve them (`prometheus_client.start_http_server`); here
they only live in a registry, so tests can read them back.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from executor.config import Event, EventKind


class ExecutorMetrics:
    """Mirrors executor events into gauges and counters (call it as the run's reporter)."""

    def __init__(self, registry: CollectorRegistry, max_bytes_per_sec: int) -> None:
        self.registry = registry
        self.moves = Gauge("rebalance_moves", "Moves of the plan by state", ["state"],
                           registry=registry)
        self.plan_moves = Gauge("rebalance_plan_moves", "Moves in the plan", registry=registry)
        self.copied = Gauge("rebalance_move_copied_bytes",
                            "Bytes on the new replicas of the move in flight", ["move"],
                            registry=registry)
        self.gate_waiting = Gauge("rebalance_gate_waiting",
                                  "1 while the gate after a move waits or holds",
                                  registry=registry)
        self.holds = Counter("rebalance_holds",
                             "Polls a move could not start because metrics were unavailable",
                             registry=registry)
        self.cap = Gauge("rebalance_throttle_cap_bytes_per_second", "The --max-mbps cap",
                         registry=registry)
        self.cap.set(max_bytes_per_sec)
        self.guard_level = Gauge("rebalance_slo_guard_level_bytes_per_second",
                                 "The SLO guard's rate ceiling per broker (the cap when no "
                                 "indicator was breached)", ["broker"], registry=registry)
        self.guard_steps = Counter("rebalance_slo_guard_decisions",
                                   "SLO guard steps that changed a broker's rate", ["action"],
                                   registry=registry)
        for action in ("lowered", "raised"):  # both series exist from the start, at 0
            self.guard_steps.labels(action)
        self._state: dict[str, str] = {}

    def __call__(self, event: Event) -> None:
        if event.kind is EventKind.STATE and event.state:
            self._move_state(event)
        elif event.kind is EventKind.PROGRESS:
            self.copied.labels(event.move).set(event.bytes_done)
        elif event.kind is EventKind.GATE:
            self.gate_waiting.set(0 if event.state == "open" else 1)
        elif event.kind is EventKind.HOLD:
            self.holds.inc()
        elif event.kind is EventKind.GUARD and event.broker is not None:
            self.guard_level.labels(str(event.broker)).set(event.rate)
            self.guard_steps.labels(event.state).inc()

    def _move_state(self, event: Event) -> None:
        if event.total:
            self.plan_moves.set(event.total)
        previous = self._state.get(event.move)
        if previous is not None:
            self.moves.labels(previous).dec()
        self.moves.labels(event.state).inc()
        self._state[event.move] = event.state
        if event.state in ("done", "cancelled", "failed"):
            if (event.move,) in self._labelled():
                self.copied.remove(event.move)
            self.gate_waiting.set(0)

    def _labelled(self) -> set[tuple[str, ...]]:
        return {tuple(s.labels.values()) for m in self.copied.collect() for s in m.samples}
