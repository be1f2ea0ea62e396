"""Gate readings from a metrics source and the admin port."""

from __future__ import annotations

from executor.readings import GateQueries, per_broker, read_gate, read_network, under_replicated
from kafka_rebalance.core.errors import MetricsError
from kafka_rebalance.core.ports import PartitionInfo
from tests.unit.executor.fakes import FakeAdmin, FakeClock
from topology.model import TopicPartition

Q = GateQueries()


class ScriptedMetrics:
    def __init__(self, answers: dict[str, list[tuple[dict[str, str], float]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        self.asked.append(promql)
        if promql not in self.answers:
            raise MetricsError("no such series")
        return self.answers[promql]


def test_per_broker_reads_the_broker_label_and_skips_others() -> None:
    metrics = ScriptedMetrics({Q.render(Q.net_in): [
        ({"broker_id": "1"}, 5.0), ({"broker_id": "2", "rack": "b"}, 7.0),
        ({"instance": "x"}, 99.0), ({"broker_id": "n/a"}, 1.0)]})
    assert per_broker(metrics, Q, Q.net_in) == {1: 5.0, 2: 7.0}
    assert "[10s]" in metrics.asked[0]


def test_read_network_keeps_the_requested_brokers() -> None:
    metrics = ScriptedMetrics({
        Q.render(Q.net_in): [({"broker_id": str(b)}, float(b)) for b in (1, 2, 3)],
        Q.render(Q.net_out): [({"broker_id": str(b)}, 10.0 * b) for b in (1, 2, 3)]})
    sample = read_network(metrics, Q, [1, 3])
    assert sample.net_in == {1: 1.0, 3: 3.0} and sample.net_out == {1: 10.0, 3: 30.0}


def test_read_gate_turns_a_metrics_error_into_unavailable() -> None:
    reading = read_gate(ScriptedMetrics({}), FakeAdmin(FakeClock()), Q, [1], want_p99=False)
    assert reading.network is None and "no such series" in reading.unavailable


def test_read_gate_collects_urp_and_p99() -> None:
    admin = FakeAdmin(FakeClock())
    admin.add("t", 0, (1, 2), 10)
    admin.parts[TopicPartition("t", 0)].isr = (1,)
    metrics = ScriptedMetrics({
        Q.render(Q.net_in): [({"broker_id": "1"}, 1.0)],
        Q.render(Q.net_out): [({"broker_id": "1"}, 1.0)],
        Q.render(Q.produce_p99_ms): [({"broker_id": "1"}, 12.0), ({"broker_id": "2"}, 30.0)]})
    reading = read_gate(metrics, admin, Q, [1], want_p99=True)
    assert reading.under_replicated == {TopicPartition("t", 0)}
    assert reading.produce_p99_ms == 30.0


def test_under_replicated_compares_isr_with_replicas() -> None:
    parts = [PartitionInfo("a", 0, (1, 2), (2, 1), 1), PartitionInfo("a", 1, (1, 2), (1,), 1)]
    assert under_replicated(parts) == {TopicPartition("a", 1)}


def test_the_gate_counts_only_under_replication_near_the_moves_brokers() -> None:
    """A follower lagging on the move's broker, or behind a leader on it, may be the copy's
    doing and a pause cures it; a slow follower of brokers 5 and 6 elsewhere is not, and
    would hold the gate for as long as it lasts."""
    parts = [PartitionInfo("near", 0, (1, 5), (5,), 5),      # lags on broker 1
             PartitionInfo("near", 1, (5, 6, 1), (1,), 1),   # led by 1, followers lag
             PartitionInfo("behind", 0, (1, 6), (1,), 1),    # behind leader 1
             PartitionInfo("far", 0, (5, 6), (5,), 5),       # elsewhere
             PartitionInfo("dead", 0, (1, 7), (1,), 1)]      # broker 7 is offline
    live = frozenset({1, 2, 5, 6})
    assert under_replicated(parts, live, frozenset({1, 2})) == {
        TopicPartition("near", 0), TopicPartition("near", 1), TopicPartition("behind", 0)}
    assert TopicPartition("far", 0) in under_replicated(parts, live)


def test_custom_templates_and_window() -> None:
    q = GateQueries(net_in="in_{window}", window="3s")
    assert q.render(q.net_in) == "in_3s"
