"""Gather gate readings from the ports: PromQL templates over a MetricsSource, ISR from admin.

The templates are configurable; the defaults match the sandbox's JMX exporter series (counters
`kafka_broker_*_total`, labels `broker_id` and `rack` added by Prometheus). `{window}` is the
rate window.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from executor.gates import GateReading, NetworkSample
from topology.errors import ClusterError, MetricsError
from topology.model import TopicPartition
from topology.ports import KafkaAdmin, MetricsSource, PartitionInfo

_RATE = "sum by (broker_id) (rate({metric}[{{window}}]))"


def _sum(*metrics: str) -> str:
    return " + ".join(_RATE.format(metric=m) for m in metrics)


@dataclass(frozen=True, slots=True)
class GateQueries:
    """PromQL templates: per-broker vectors labelled `broker_label`, one scalar for p99."""

    net_in: str = _sum("kafka_broker_bytes_in_total", "kafka_broker_replication_bytes_in_total")
    net_out: str = _sum("kafka_broker_bytes_out_total",
                        "kafka_broker_replication_bytes_out_total")
    traffic_in: str = _sum("kafka_broker_bytes_in_total")  # non-replication, for --adaptive
    traffic_out: str = _sum("kafka_broker_bytes_out_total")
    produce_p99_ms: str = 'max(kafka_request_total_time_ms{request="Produce",quantile="0.99"})'
    window: str = "10s"
    broker_label: str = "broker_id"

    def render(self, template: str) -> str:
        return template.replace("{window}", self.window)


def per_broker(metrics: MetricsSource, queries: GateQueries, template: str) -> dict[int, float]:
    """Evaluate a per-broker template; series without a readable broker label are skipped."""
    result: dict[int, float] = {}
    for labels, value in metrics.query(queries.render(template)):
        raw = labels.get(queries.broker_label)
        if raw is not None and raw.lstrip("-").isdigit():
            result[int(raw)] = result.get(int(raw), 0.0) + value
    return result


def read_network(metrics: MetricsSource, queries: GateQueries,
                 brokers: Iterable[int]) -> NetworkSample:
    """Network in/out of `brokers` (raises MetricsError when Prometheus cannot answer)."""
    keep = set(brokers)
    net_in = per_broker(metrics, queries, queries.net_in)
    net_out = per_broker(metrics, queries, queries.net_out)
    return NetworkSample({b: v for b, v in net_in.items() if b in keep},
                         {b: v for b, v in net_out.items() if b in keep})


def read_traffic(metrics: MetricsSource, queries: GateQueries) -> tuple[
    dict[int, float], dict[int, float]
]:
    """Non-replication bytes in and out per broker (the load --adaptive leaves room for)."""
    return (per_broker(metrics, queries, queries.traffic_in),
            per_broker(metrics, queries, queries.traffic_out))


def under_replicated(partitions: Iterable[PartitionInfo]) -> frozenset[TopicPartition]:
    """Partitions whose ISR lacks one of their assigned replicas."""
    return frozenset(p.key for p in partitions if not set(p.replicas) <= set(p.isr))


def read_gate(metrics: MetricsSource, admin: KafkaAdmin, queries: GateQueries,
              brokers: Iterable[int], want_p99: bool) -> GateReading:
    """One gate sample; a metrics or cluster failure becomes an 'unavailable' reading."""
    try:
        network = read_network(metrics, queries, brokers)
        p99: float | None = None
        if want_p99:
            values = [v for _, v in metrics.query(queries.render(queries.produce_p99_ms))]
            p99 = max(values) if values else None
    except MetricsError as exc:
        return GateReading(None, unavailable=str(exc))
    try:
        urp = under_replicated(admin.partitions())
    except ClusterError as exc:
        return GateReading(None, unavailable=f"cluster metadata: {exc}")
    return GateReading(network, urp, p99)
