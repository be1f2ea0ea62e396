"""One poll asks the cluster each read once: moves side by side share the answers, and a
write in between makes the next read fresh."""

from __future__ import annotations

import pytest

from executor.config import AUTO
from executor.records import RunOutcome
from executor.runner import Executor
from executor.tickreads import TickReads
from kafka_rebalance.core.errors import ClusterError
from tests.unit.executor.fakes import FakeAdmin, FakeClock, make_world
from topology.model import TopicPartition

WRITES = {"alter_broker_configs", "alter_topic_configs", "alter_partition_reassignments",
          "elect_preferred_leaders"}


def admin() -> FakeAdmin:
    fake = FakeAdmin(FakeClock())
    fake.add("orders", 0, (1, 2), 10)
    return fake


def names(fake: FakeAdmin) -> list[str]:
    return [name for name, _ in fake.calls]


def test_a_read_is_asked_once_per_tick_and_again_after_new_tick() -> None:
    fake = admin()
    reads = TickReads(fake)
    reads.new_tick()
    for _ in range(3):
        reads.brokers()
        reads.list_partition_reassignments()
        reads.partitions(["orders"])
        reads.log_dir_sizes([2, 1])
    assert names(fake) == ["brokers", "list_partition_reassignments", "partitions",
                           "log_dir_sizes"]
    reads.new_tick()
    reads.brokers()
    assert names(fake).count("brokers") == 2 and reads.asked == 5


def test_outside_a_poll_every_read_goes_to_the_cluster() -> None:
    """Cancel and the end of a run read between polls: they must see the cluster as it is."""
    fake = admin()
    reads = TickReads(fake)
    reads.new_tick()
    reads.list_partition_reassignments()
    reads.end_tick()
    for _ in range(2):
        reads.list_partition_reassignments()
        reads.partitions(["orders"])
        reads.log_dir_sizes([1])
    assert names(fake).count("list_partition_reassignments") == 3
    assert names(fake).count("partitions") == names(fake).count("log_dir_sizes") == 2


def test_the_first_move_to_ask_fetches_what_every_move_in_flight_will_ask() -> None:
    fake = admin()
    fake.add("events", 0, (2, 3), 20)
    reads = TickReads(fake)
    reads.new_tick(topics={"orders", "events"}, receivers={1, 2, 3})
    assert [p.key for p in reads.partitions(["orders"])] == [TopicPartition("orders", 0)]
    assert [p.key for p in reads.partitions(["events"])] == [TopicPartition("events", 0)]
    assert reads.log_dir_sizes([1]) == {(TopicPartition("orders", 0), 1): 10}
    assert reads.log_dir_sizes([3]) == {(TopicPartition("events", 0), 3): 20}
    assert [(name, sorted(args)) for name, args in fake.calls] == [  # type: ignore[call-overload]
        ("partitions", ["events", "orders"]), ("log_dir_sizes", [1, 2, 3])]


def test_a_dead_broker_of_another_move_does_not_fail_this_ones_read() -> None:
    fake = admin()
    reads = TickReads(fake)
    reads.new_tick(topics={"orders"}, receivers={1, 2})
    fake.dead.add(2)
    assert reads.log_dir_sizes([1]) == {(TopicPartition("orders", 0), 1): 10}
    with pytest.raises(ClusterError):
        reads.log_dir_sizes([2])


def test_a_write_makes_the_next_read_fresh() -> None:
    fake = admin()
    reads = TickReads(fake)
    reads.new_tick()
    assert reads.list_partition_reassignments() == {}
    reads.alter_partition_reassignments({TopicPartition("orders", 0): [1, 3]})
    assert TopicPartition("orders", 0) in reads.list_partition_reassignments()


def test_config_reads_pass_through_and_a_failed_read_is_not_kept() -> None:
    fake = admin()
    reads = TickReads(fake)
    reads.new_tick()
    reads.broker_configs([1], ["leader.replication.throttled.rate"])
    reads.broker_configs([1], ["leader.replication.throttled.rate"])
    assert names(fake).count("broker_configs") == 2
    fake.dead.add(2)
    with pytest.raises(ClusterError):
        reads.log_dir_sizes([2])
    fake.dead.discard(2)
    assert reads.log_dir_sizes([2]) == {(TopicPartition("orders", 0), 2): 10}


def test_moves_side_by_side_share_each_polls_reads() -> None:
    """Between two polls, `list_partition_reassignments` and `brokers` reach the cluster once,
    plus once after each write; before, every move in flight asked them itself."""
    world = make_world(concurrency=AUTO)
    world.clock.sleep = _marking(world.clock, world.admin)  # type: ignore[method-assign]
    executor = Executor.start(world.plan, world.ports(), world.config, world.open_sink)
    assert executor.run().outcome is RunOutcome.COMPLETED
    polls: list[list[str]] = []
    current: list[str] = []
    for name, _ in world.admin.calls:
        if name == "poll":
            polls.append(current)
            current = []
        else:
            current.append(name)
    busy = [p for p in polls if p.count("log_dir_sizes") >= 2]  # two moves copying
    assert busy
    for calls in polls:
        writes = sum(1 for name in calls if name in WRITES)
        for read in ("list_partition_reassignments", "brokers"):
            assert calls.count(read) <= 1 + writes, calls


def _marking(clock: FakeClock, fake: FakeAdmin):  # type: ignore[no-untyped-def]
    sleep = clock.sleep

    def mark(seconds: float) -> None:
        fake.calls.append(("poll", None))
        sleep(seconds)
    return mark


def test_an_answer_missing_a_live_broker_is_asked_again_and_a_real_death_stands() -> None:
    """One DescribeCluster answer without brokers 1 and 2 (another broker dying): asked
    again, the second answer stands; a broker really gone is gone in both."""
    fake = admin()
    reads = TickReads(fake)
    assert [b.id for b in reads.brokers()] == [1, 2, 3, 4]
    real = fake.brokers
    answers = iter([[b for b in real() if b.id in (3, 4)]])
    fake.brokers = lambda: next(answers, None) or real()  # type: ignore[method-assign]
    assert [b.id for b in reads.brokers()] == [1, 2, 3, 4]
    fake.dead.add(4)
    assert [b.id for b in reads.brokers()] == [1, 2, 3]
    asked = reads.asked
    assert [b.id for b in reads.brokers()] == [1, 2, 3]  # no shrink: asked once
    assert reads.asked == asked + 1
