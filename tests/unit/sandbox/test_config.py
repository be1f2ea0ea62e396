"""Pure sandbox config rendering: ports, racks, properties, exporter rules, Prometheus config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kafka_rebalance.core.errors import SandboxError
from kafka_rebalance.sandbox import config

CONTRACT = {
    "kafka_topic_bytes_in_total", "kafka_topic_bytes_out_total",
    "kafka_broker_bytes_in_total", "kafka_broker_bytes_out_total",
    "kafka_broker_replication_bytes_in_total", "kafka_broker_replication_bytes_out_total",
    "kafka_broker_reassignment_bytes_in_total", "kafka_broker_reassignment_bytes_out_total",
    "kafka_log_size_bytes", "kafka_under_replicated_partitions", "kafka_request_total_time_ms",
    "kafka_log_flush_time_ms", "kafka_topic_remote_log_size_bytes",
    "kafka_topic_produce_requests_total", "kafka_topic_fetch_requests_total",
}


def parse_properties(text: str) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in text.splitlines() if line]
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), "duplicate keys"
    return dict(pairs)  # type: ignore[arg-type]


def test_port_plan_derives_every_port_from_the_base() -> None:
    plan = config.PortPlan(29090)
    assert (plan.prometheus, plan.controller) == (29090, 29091)
    assert [plan.broker(i) for i in (1, 2, 4)] == [29092, 29093, 29095]
    assert [plan.metrics(i) for i in (1, 4)] == [29401, 29404]
    assert plan.metrics(1) > plan.broker(config.MAX_BROKER_ID)


@pytest.mark.parametrize("base", [80, 65000])
def test_port_plan_rejects_bases_out_of_range(base: int) -> None:
    with pytest.raises(SandboxError, match="base port"):
        config.PortPlan(base)


def test_broker_ids_outside_the_plan_are_rejected() -> None:
    with pytest.raises(SandboxError, match="broker id 0"):
        config.PortPlan().broker(0)


def test_racks_are_assigned_round_robin() -> None:
    assert config.initial_racks(5, 2) == ["a", "b", "a", "b", "a"]
    assert config.initial_racks(3, 3) == ["a", "b", "c"]
    with pytest.raises(SandboxError, match="--racks"):
        config.initial_racks(4, 0)
    with pytest.raises(SandboxError, match="--brokers"):
        config.initial_racks(0, 2)
    with pytest.raises(SandboxError, match="--racks 3 is more than --brokers 2"):
        config.initial_racks(2, 3)


def test_broker_properties_carry_rack_listener_and_quorum() -> None:
    text = config.broker_properties(2, "b", config.PortPlan(30090), (Path("/x/broker-2/data"),), 3)
    props = parse_properties(text)
    assert props["node.id"] == "2"
    assert props["broker.rack"] == "b"
    assert props["process.roles"] == "broker"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:30093"
    assert props["controller.quorum.voters"] == f"{config.CONTROLLER_ID}@127.0.0.1:30091"
    assert props["log.dirs"] == "/x/broker-2/data"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"
    assert text == config.broker_properties(2, "b", config.PortPlan(30090),
                                            (Path("/x/broker-2/data"),), 3)


def test_single_broker_sandbox_uses_rf_one_internal_topics() -> None:
    props = parse_properties(
        config.broker_properties(1, "a", config.PortPlan(), (Path("/d"),), 1))
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"


def test_controller_is_a_dedicated_quorum_member() -> None:
    props = parse_properties(config.controller_properties(config.PortPlan(29090), Path("/c")))
    assert props["process.roles"] == "controller"
    assert props["node.id"] == str(config.CONTROLLER_ID)
    assert props["listeners"] == "CONTROLLER://127.0.0.1:29091"


def test_exporter_rules_name_exactly_the_contract_series() -> None:
    assert {str(rule["name"]) for rule in config.exporter_rules()} == CONTRACT


def first_match(bean_attribute: str, rules: list[dict[str, object]] | None = None,
                lowercase: bool = False) -> tuple[str, dict[str, str]] | None:
    """Emulate the exporter: the first rule whose (unanchored) pattern matches wins; its
    name's groups are filled (and lowercased, as lowercaseOutputName does)."""
    for rule in config.exporter_rules() if rules is None else rules:
        match = re.match(r"^.*(?:" + str(rule["pattern"]) + r").*$", bean_attribute + ": 1.0")
        if match:
            labels = {k: match.expand(str(v).replace("$", "\\"))
                      for k, v in dict(rule.get("labels", {})).items()}  # type: ignore[call-overload]
            name = match.expand(str(rule["name"]).replace("$", "\\"))
            return (name.lower() if lowercase else name), labels
    return None


@pytest.mark.parametrize(("bean", "expected"), [
    ("kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec, topic=orders><>Count",
     ("kafka_topic_bytes_in_total", {"topic": "orders"})),
    ("kafka.server<type=BrokerTopicMetrics, name=BytesOutPerSec><>Count",
     ("kafka_broker_bytes_out_total", {})),
    ("kafka.server<type=BrokerTopicMetrics, name=TotalProduceRequestsPerSec, topic=orders><>Count",
     ("kafka_topic_produce_requests_total", {"topic": "orders"})),
    ("kafka.server<type=BrokerTopicMetrics, name=TotalFetchRequestsPerSec><>Count", None),
    ("kafka.server<type=BrokerTopicMetrics, name=ReplicationBytesInPerSec><>Count",
     ("kafka_broker_replication_bytes_in_total", {})),
    ("kafka.server<type=BrokerTopicMetrics, name=ReassignmentBytesOutPerSec><>Count",
     ("kafka_broker_reassignment_bytes_out_total", {})),
    ("kafka.log<type=Log, name=Size, topic=orders, partition=12><>Value",
     ("kafka_log_size_bytes", {"topic": "orders", "partition": "12"})),
    ("kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value",
     ("kafka_under_replicated_partitions", {})),
    ("kafka.network<type=RequestMetrics, name=TotalTimeMs, request=Produce><>99thPercentile",
     ("kafka_request_total_time_ms", {"request": "Produce", "quantile": "0.99"})),
    ("kafka.network<type=RequestMetrics, name=TotalTimeMs, request=FetchFollower>"
     "<>999thPercentile",
     ("kafka_request_total_time_ms", {"request": "FetchFollower", "quantile": "0.999"})),
    ("kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs><>95thPercentile",
     ("kafka_log_flush_time_ms", {"quantile": "0.95"})),
    ("kafka.server<type=BrokerTopicMetrics, name=RemoteLogSizeBytes, topic=orders><>Value",
     ("kafka_topic_remote_log_size_bytes", {"topic": "orders"})),
    ("kafka.log<type=Log, name=Size, topic=__cluster_metadata, partition=0><>Value", None),
    ("kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec><>OneMinuteRate", None),
    ("kafka.network<type=RequestMetrics, name=TotalTimeMs, request=Metadata><>99thPercentile",
     None),
])
def test_exporter_rules_map_kafka_beans(
    bean: str, expected: tuple[str, dict[str, str]] | None
) -> None:
    assert first_match(bean) == expected


def test_prometheus_scrapes_each_second_with_broker_labels() -> None:
    targets = [config.ScrapeTarget(2, "b", 29402), config.ScrapeTarget(1, "a", 29401)]
    rendered = config.prometheus_config(targets)
    assert rendered["global"] == {"scrape_interval": "1s", "evaluation_interval": "1s",
                                  "scrape_timeout": "1s"}
    static = rendered["scrape_configs"][0]["static_configs"]  # type: ignore[index]
    assert static == [
        {"targets": ["127.0.0.1:29401"], "labels": {"broker_id": "1", "rack": "a"}},
        {"targets": ["127.0.0.1:29402"], "labels": {"broker_id": "2", "rack": "b"}},
    ]


def test_java_command_has_small_heap_and_serial_gc() -> None:
    cmd = config.java_command(Path("/jars"), "384m", "kafka.Kafka", ["/s/server.properties"])
    assert cmd[0] == "java"
    assert "-Xmx384m" in cmd and "-XX:+UseSerialGC" in cmd
    assert cmd[-3:] == ["/jars/*", "kafka.Kafka", "/s/server.properties"]


def test_tiered_storage_uses_the_shared_remote_dir_on_brokers_and_the_controller() -> None:
    ports = config.PortPlan(29090)
    remote = Path("/tmp/sb/remote-storage")
    props = parse_properties(config.broker_properties(1, "a", ports, (Path("/tmp/sb/data"),), 3,
                                                      remote_dir=remote))
    assert props["remote.log.storage.system.enable"] == "true"
    assert props["remote.log.storage.manager.class.name"] == config.REMOTE_STORAGE_MANAGER
    assert props["rsm.config.dir"] == str(remote)
    assert props["log.retention.check.interval.ms"] == "2000"  # local copies go promptly
    plain = parse_properties(config.broker_properties(1, "a", ports, (Path("/tmp/sb/data"),), 3))
    assert not any(key.startswith(("remote.", "rsm.", "rlmm.")) for key in plain)
    controller = parse_properties(config.controller_properties(ports, Path("/c"), tiered=True))
    assert controller["remote.log.storage.system.enable"] == "true"
    assert "remote.log.storage.system.enable" not in parse_properties(
        config.controller_properties(ports, Path("/c")))


def test_a_jbod_sandbox_gives_each_broker_its_log_dirs() -> None:
    props = parse_properties(config.broker_properties(
        1, "a", config.PortPlan(), (Path("/sb/broker-1/data"), Path("/sb/broker-1/data-2")), 3))
    assert props["log.dirs"] == "/sb/broker-1/data,/sb/broker-1/data-2"


def strimzi_match(bean_attribute: str) -> tuple[str, dict[str, str]] | None:
    """`first_match` for the Strimzi-style rules."""
    return first_match(bean_attribute, config.strimzi_style_rules(), lowercase=True)


@pytest.mark.parametrize(("bean", "expected"), [
    ("kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec, topic=orders><>Count",
     ("kafka_server_brokertopicmetrics_bytesin_total", {"topic": "orders"})),
    ("kafka.server<type=BrokerTopicMetrics, name=ReplicationBytesOutPerSec><>Count",
     ("kafka_server_brokertopicmetrics_replicationbytesout_total", {})),
    ("kafka.server<type=BrokerTopicMetrics, name=ReassignmentBytesInPerSec><>Count",
     ("kafka_server_brokertopicmetrics_reassignmentbytesin_total", {})),
    ("kafka.network<type=RequestMetrics, name=TotalTimeMs, request=Produce><>99thPercentile",
     ("kafka_network_requestmetrics_totaltimems", {"request": "Produce", "quantile": "0.99"})),
    ("kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs><>95thPercentile",
     ("kafka_log_logflushstats_logflushrateandtimems", {"quantile": "0.95"})),
    ("kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value",
     ("kafka_server_replicamanager_underreplicatedpartitions", {})),
])
def test_strimzi_style_rules_name_series_as_strimzi_does(
    bean: str, expected: tuple[str, dict[str, str]]
) -> None:
    assert strimzi_match(bean) == expected


def test_the_strimzi_queries_file_asks_only_for_series_those_rules_make() -> None:
    """Every broker series dashboards/queries-strimzi.yaml names is one the Strimzi-style
    rules produce, and its broker label is the one the sandbox's scrape config sets."""
    from executor.readings import GateQueries

    path = Path(__file__).parents[3] / "dashboards" / "queries-strimzi.yaml"
    raw = yaml.safe_load(path.read_text())
    queries = GateQueries.from_dict(raw, str(path))
    assert queries.broker_label == config.BROKER_LABELS["strimzi"]
    beans = [f"kafka.server<type=BrokerTopicMetrics, name={meter}><>Count"
             for meter in config.TOPIC_METERS] + [
        "kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value",
        "kafka.network<type=RequestMetrics, name=TotalTimeMs, request=Produce><>99thPercentile",
        "kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs><>95thPercentile"]
    made = {found[0] for bean in beans if (found := strimzi_match(bean)) is not None}
    asked = {name for value in raw.values()
             for name in re.findall(r"\b(kafka_[a-z_]+)\{", str(value))}
    asked.discard("kafka_consumergroup_lag")  # kafka_exporter's, not a broker's
    assert asked and asked <= made, asked - made


def test_the_shipped_exporter_rules_are_the_sandboxs() -> None:
    """dashboards/jmx-exporter-rules.yaml is what the sandbox's brokers run: regenerate it
    from config.exporter_config() when the rules change."""
    path = Path(__file__).parents[3] / "dashboards" / "jmx-exporter-rules.yaml"
    assert yaml.safe_load(path.read_text()) == config.exporter_config()
