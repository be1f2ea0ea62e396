"""Default PromQL templates, in one place, for the series the sandbox's JMX exporter rules produce.

Each template is a `str.format` pattern. `{window}` is a range such as `1m`; `{selector}` is
extra label matchers inside the braces (empty, or e.g. `broker_id=~"1|2"`). Operators whose
exporter names series differently override these through the commands' flags or config.
Every series carries `broker_id` and `rack` labels (added by Prometheus' scrape config).
"""

from __future__ import annotations

import string

DEFAULT_RATE_WINDOW = "1m"

# Per-topic traffic, summed over brokers. BytesIn counts producer bytes at the leader only,
# BytesOut consumer bytes at whichever broker served the fetch (replication is excluded).
TOPIC_BYTES_IN_RATE = "sum by (topic) (rate(kafka_topic_bytes_in_total{{{selector}}}[{window}]))"
TOPIC_BYTES_OUT_RATE = (
    "sum by (topic) (rate(kafka_topic_bytes_out_total{{{selector}}}[{window}]))"
)

# Per-topic produce and fetch requests (consumers' and followers'), summed over brokers: the
# requests the leaders of a topic's partitions serve. rate() drops the names, so the two meters
# are summed apart and added; a topic with only one of them keeps that one.
_TOPIC_PRODUCE_REQUESTS = (
    "sum by (topic) (rate(kafka_topic_produce_requests_total{{{selector}}}[{window}]))"
)
_TOPIC_FETCH_REQUESTS = (
    "sum by (topic) (rate(kafka_topic_fetch_requests_total{{{selector}}}[{window}]))"
)
TOPIC_REQUESTS_RATE = (
    f"({_TOPIC_PRODUCE_REQUESTS} + {_TOPIC_FETCH_REQUESTS}) or {_TOPIC_PRODUCE_REQUESTS} "
    f"or {_TOPIC_FETCH_REQUESTS}"
)

# Broker network in/out: client traffic plus replication plus reassignment traffic.
BROKER_NETWORK_IN_RATE = (
    "sum by (broker_id) (rate(kafka_broker_bytes_in_total{{{selector}}}[{window}]))"
    " + on (broker_id) "
    "sum by (broker_id) (rate(kafka_broker_replication_bytes_in_total{{{selector}}}[{window}]))"
)
BROKER_NETWORK_OUT_RATE = (
    "sum by (broker_id) (rate(kafka_broker_bytes_out_total{{{selector}}}[{window}]))"
    " + on (broker_id) "
    "sum by (broker_id) (rate(kafka_broker_replication_bytes_out_total{{{selector}}}[{window}]))"
)
# Client traffic only (producers in, consumers out), e.g. for throttle headroom.
BROKER_CLIENT_IN_RATE = (
    "sum by (broker_id) (rate(kafka_broker_bytes_in_total{{{selector}}}[{window}]))"
)
BROKER_CLIENT_OUT_RATE = (
    "sum by (broker_id) (rate(kafka_broker_bytes_out_total{{{selector}}}[{window}]))"
)
BROKER_REASSIGNMENT_IN_RATE = (
    "sum by (broker_id) (rate(kafka_broker_reassignment_bytes_in_total{{{selector}}}[{window}]))"
)
BROKER_REASSIGNMENT_OUT_RATE = (
    "sum by (broker_id) (rate(kafka_broker_reassignment_bytes_out_total{{{selector}}}[{window}]))"
)

# Leading indicators the executor's gates watch.
UNDER_REPLICATED_PARTITIONS = "sum by (broker_id) (kafka_under_replicated_partitions{{{selector}}})"
PRODUCE_P99_MS = (
    'max by (broker_id) (kafka_request_total_time_ms{{request="Produce",quantile="0.99"'
    "{comma}{selector}}})"
)
FETCH_CONSUMER_P99_MS = (
    'max by (broker_id) (kafka_request_total_time_ms{{request="FetchConsumer",quantile="0.99"'
    "{comma}{selector}}})"
)
LOG_FLUSH_P95_MS = (
    'max by (broker_id) (kafka_log_flush_time_ms{{quantile="0.95"{comma}{selector}}})'
)
# Consumer lag in messages, the largest group's total: the series kafka_exporter exports (the
# sandbox has none; the SLO guard skips an indicator without a series).
CONSUMER_LAG = "max(sum by (consumergroup) (kafka_consumergroup_lag{{{selector}}}))"

# Replica log sizes as the brokers report them (an alternative to DescribeLogDirs).
LOG_SIZE_BYTES = "max by (topic, partition) (kafka_log_size_bytes{{{selector}}})"

# Tiered storage (KIP-405): bytes each topic keeps in remote storage. Each broker reports the
# partitions it leads (BrokerTopicMetrics RemoteLogSizeBytes), so the sum over brokers is the
# topic's; brokers without remote storage report no series.
TOPIC_REMOTE_LOG_SIZE_BYTES = (
    "sum by (topic) (kafka_topic_remote_log_size_bytes{{{selector}}})"
)


TEMPLATES: dict[str, str] = {
    "topic_bytes_in_rate": TOPIC_BYTES_IN_RATE,
    "topic_bytes_out_rate": TOPIC_BYTES_OUT_RATE,
    "topic_requests_rate": TOPIC_REQUESTS_RATE,
    "broker_network_in_rate": BROKER_NETWORK_IN_RATE,
    "broker_network_out_rate": BROKER_NETWORK_OUT_RATE,
    "broker_client_in_rate": BROKER_CLIENT_IN_RATE,
    "broker_client_out_rate": BROKER_CLIENT_OUT_RATE,
    "broker_reassignment_in_rate": BROKER_REASSIGNMENT_IN_RATE,
    "broker_reassignment_out_rate": BROKER_REASSIGNMENT_OUT_RATE,
    "under_replicated_partitions": UNDER_REPLICATED_PARTITIONS,
    "produce_p99_ms": PRODUCE_P99_MS,
    "fetch_consumer_p99_ms": FETCH_CONSUMER_P99_MS,
    "log_flush_p95_ms": LOG_FLUSH_P95_MS,
    "consumer_lag": CONSUMER_LAG,
    "log_size_bytes": LOG_SIZE_BYTES,
    "topic_remote_log_size_bytes": TOPIC_REMOTE_LOG_SIZE_BYTES,
}
"""Every default template by name (documentation, and the integration test's checklist)."""


_FIELDS = frozenset({"window", "selector", "comma"})


def render(template: str, window: str = DEFAULT_RATE_WINDOW, selector: str = "") -> str:
    """Fill a template: the rate window and optional extra label matchers. Only the plain
    fields {window}, {selector} and {comma} are filled: an attribute, index, conversion or
    format spec ({window.__class__}, {window:>99999999}) is a ValueError, never evaluated."""
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is not None and (field not in _FIELDS or spec or conversion):
            raise ValueError(f"unknown field {{{field}{'!' + conversion if conversion else ''}"
                             f"{':' + spec if spec else ''}}}")
    return template.format(window=window, selector=selector, comma="," if selector else "")
