"""Leadership-only moves (a demotion, a preferred-leader reorder) copy nothing: they start
together in batches once no copy is in flight, with no throttle config read or written, no
gate, and without Prometheus."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from executor.config import Event, EventKind
from executor.records import RunOutcome
from executor.runner import Executor
from executor.starts import LEADERSHIP_BATCH
from executor.state import MoveState
from kafka_rebalance.core.errors import ClusterError
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world
from topology.model import TopicPartition


def _leaderships(count: int) -> list[Move]:
    return [Move("lead", p, (1, 2), (2, 1), 10 * MB) for p in range(count)]


def _starts_by_poll(world: World) -> Counter[float]:
    """How many leadership moves started at each poll (by the fake clock)."""
    starts: Counter[float] = Counter()

    def watch(w: World, e: Event) -> None:
        if e.kind is EventKind.STATE and e.state == MoveState.THROTTLING.value:
            starts[w.clock.now()] += 1
    world.hooks.append(watch)
    return starts


def _run(world: World) -> RunOutcome:
    return Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                          reporter=world.reporter).run().outcome


def test_a_demotion_runs_in_batches_with_no_throttle_no_gate_and_no_prometheus() -> None:
    count = LEADERSHIP_BATCH * 2 + 30
    world = make_world(_leaderships(count))
    world.metrics.down = True  # nothing of a leadership change depends on Prometheus
    before = world.admin.configs()
    starts = _starts_by_poll(world)
    assert _run(world) is RunOutcome.COMPLETED
    assert sorted(starts.values()) == [30, LEADERSHIP_BATCH, LEADERSHIP_BATCH]  # not one a poll
    assert all(world.admin.parts[m.key].replicas == (2, 1) for m in world.plan.moves)
    assert world.admin.configs() == before
    written = {name for name, _ in world.admin.calls if name.startswith("alter_")}
    assert "alter_broker_configs" not in written and "alter_topic_configs" not in written
    reads = [name for name, _ in world.admin.calls if name.endswith("_configs")]
    assert len(reads) <= 3  # preflight's; no throttle priors read for a move that sets none
    assert not world.messages(EventKind.HOLD) and not world.messages(EventKind.GATE)


def test_leadership_moves_wait_for_the_copies_and_their_gates() -> None:
    """A copy's gate compares its brokers with the network before it: leadership moved under
    it would shift client traffic; the batch starts once no copy is in flight."""
    copy = Move("orders", 0, (1, 2), (3, 2), 30 * MB)
    world = make_world([copy, *_leaderships(5)], concurrency="auto")
    order: list[tuple[str, str]] = []
    world.hooks.append(lambda w, e: order.append((e.move or "", e.state or ""))
                       if e.kind is EventKind.STATE else None)
    assert _run(world) is RunOutcome.COMPLETED
    copy_done = order.index(("orders-0", "done"))
    first_lead = min(i for i, (m, s) in enumerate(order) if m.startswith("lead-"))
    assert first_lead > copy_done


def test_when_a_batched_request_fails_each_move_submits_and_elects_on_its_own() -> None:
    """A cluster that refuses a request naming several partitions: the batch falls back to
    one request per move, each with its own error if any, and the run completes."""
    world = make_world(_leaderships(5))
    admin = world.admin
    single_alter, single_elect = admin.alter_partition_reassignments, admin.elect_preferred_leaders
    refused: list[str] = []

    def alter(targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        if len(targets) > 1:
            refused.append("alter")
            raise ClusterError("timed out calling alter partition reassignments")
        single_alter(targets)

    def elect(partitions: Iterable[TopicPartition]) -> None:
        wanted = list(partitions)
        if len(wanted) > 1:
            refused.append("elect")
            raise ClusterError("timed out calling elect preferred leaders")
        single_elect(wanted)

    admin.alter_partition_reassignments = alter  # type: ignore[method-assign]
    admin.elect_preferred_leaders = elect  # type: ignore[method-assign]
    assert _run(world) is RunOutcome.COMPLETED
    assert refused == ["alter", "elect"]
    assert all(admin.parts[m.key].replicas == (2, 1) for m in world.plan.moves)
    assert all(admin.parts[m.key].leader == 2 for m in world.plan.moves)
