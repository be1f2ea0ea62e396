"""Pure rendering of the sandbox's configuration files: no I/O, same input gives the same text.

One dedicated KRaft controller plus N brokers, each broker with `broker.rack` and the Prometheus
JMX exporter agent; a Prometheus scraping every broker each second with `broker_id`/`rack` labels.
The exporter rules produce exactly the series of the project's metrics contract (see
`topology/promql.py` for the queries built on them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_rebalance.core.errors import SandboxError
from kafka_rebalance.sandbox.links import LOOPBACK

CONTROLLER_ID = 3000
MAX_BROKER_ID = 300
DEFAULT_BASE_PORT = 29090
SCRAPE_INTERVAL = "1s"
BROKER_HEAP = "384m"
CONTROLLER_HEAP = "256m"


@dataclass(frozen=True)
class PortPlan:
    """Every port of a sandbox derives from one base port.

    base: Prometheus; base+1: controller; base+1+id: broker id; base+310+id: its exporter.
    """

    base: int = DEFAULT_BASE_PORT

    def __post_init__(self) -> None:
        if not 1024 <= self.base <= 65535 - 2 * MAX_BROKER_ID - 20:
            raise SandboxError(f"base port {self.base} is out of range (1024..64900)")

    @property
    def prometheus(self) -> int:
        return self.base

    @property
    def controller(self) -> int:
        return self.base + 1

    def broker(self, broker_id: int) -> int:
        _check_broker_id(broker_id)
        return self.base + 1 + broker_id

    def metrics(self, broker_id: int) -> int:
        _check_broker_id(broker_id)
        return self.base + 10 + MAX_BROKER_ID + broker_id


def _check_broker_id(broker_id: int) -> None:
    if not 1 <= broker_id <= MAX_BROKER_ID:
        raise SandboxError(f"broker id {broker_id} is outside 1..{MAX_BROKER_ID}")


def rack_names(racks: int) -> list[str]:
    """Rack names a, b, c, ... for the given rack count."""
    if not 1 <= racks <= 26:
        raise SandboxError(f"--racks must be between 1 and 26, got {racks}")
    return [chr(ord("a") + i) for i in range(racks)]


def initial_racks(brokers: int, racks: int) -> list[str]:
    """Rack of each broker 1..N, assigned round robin so racks stay even."""
    if brokers < 1:
        raise SandboxError(f"--brokers must be at least 1, got {brokers}")
    if racks > brokers:
        raise SandboxError(f"--racks {racks} is more than --brokers {brokers}: a rack would "
                           "have no broker; use at most as many racks as brokers")
    names = rack_names(racks)
    return [names[i % len(names)] for i in range(brokers)]


def _properties(values: Mapping[str, object]) -> str:
    return "".join(f"{key}={values[key]}\n" for key in sorted(values))


def _quorum(ports: PortPlan, controller_host: str) -> str:
    return f"{CONTROLLER_ID}@{controller_host}:{ports.controller}"


def controller_properties(ports: PortPlan, data_dir: Path, host: str = LOOPBACK,
                          tiered: bool = False) -> str:
    """server.properties of the dedicated KRaft controller, listening on host (the bridge of
    a linked sandbox, where the brokers' namespaces reach it). `tiered`: it accepts topics
    with remote storage (it validates their configs)."""
    return _properties({
        **({"remote.log.storage.system.enable": "true"} if tiered else {}),
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "controller.quorum.voters": _quorum(ports, host),
        "listeners": f"CONTROLLER://{host}:{ports.controller}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
        # Topic defaults live with the controller in KRaft (it creates the topics); set on a
        # broker they are ignored and warned about on every config reload.
        "num.partitions": 1,
        "default.replication.factor": 1,
        "num.io.threads": 2,
        "num.network.threads": 1,
        "background.threads": 2,
    })


def broker_properties(
    broker_id: int, rack: str, ports: PortPlan, data_dirs: Sequence[Path], internal_rf: int,
    host: str = LOOPBACK, controller_host: str = LOOPBACK, remote_dir: Path | None = None,
    quota_window_samples: int | None = None,
) -> str:
    """server.properties of one broker: small thread pools, small segments, explicit topics;
    it listens (and is advertised) on host, its namespace's address in a linked sandbox. More
    than one of `data_dirs`: a JBOD broker (KIP-858), one log dir each. With `remote_dir`,
    tiered storage in that directory (shared by every broker). `quota_window_samples` sets
    replication.quota.window.num (None: Kafka's default)."""
    port = ports.broker(broker_id)
    min_isr = 2 if internal_rf >= 3 else 1
    return _properties({
        "process.roles": "broker",
        "node.id": broker_id,
        "broker.rack": rack,
        "controller.quorum.voters": _quorum(ports, controller_host),
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://{host}:{port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": ",".join(str(d) for d in data_dirs),
        # Small segments so log sizes and segment rolls show up with little data.
        "log.segment.bytes": 1048576,
        "log.retention.check.interval.ms": 30000,
        "auto.create.topics.enable": "false",
        # Leadership moves only when the tool asks for it: deterministic tests.
        "auto.leader.rebalance.enable": "false",
        "offsets.topic.replication.factor": internal_rf,
        "offsets.topic.num.partitions": 4,
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": 4,
        "share.coordinator.state.topic.replication.factor": internal_rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": 0,
        "num.io.threads": 2,
        "num.network.threads": 2,
        "num.replica.fetchers": 1,
        "background.threads": 2,
        "log.cleaner.threads": 1,
        "log.cleaner.dedupe.buffer.size": 8388608,
        "num.recovery.threads.per.data.dir": 1,
        **(tiered_storage(remote_dir, internal_rf) if remote_dir else {}),
        **({"replication.quota.window.num": quota_window_samples}
           if quota_window_samples is not None else {}),
    })


REMOTE_STORAGE_MANAGER = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def tiered_storage(remote_dir: Path, internal_rf: int) -> dict[str, object]:
    """Broker settings of tiered storage: Kafka's file-system remote storage manager in
    `remote_dir`, remote log metadata in Kafka's own topic, segments copied within a second of
    rolling and local segments past their topic's local retention deleted within a few."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": REMOTE_STORAGE_MANAGER,
        "rsm.config.dir": remote_dir,
        "rsm.config.delete.enable": "true",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": internal_rf,
        "rlmm.config.remote.log.metadata.topic.num.partitions": 4,
        "remote.log.manager.task.interval.ms": 1000,
        "log.retention.check.interval.ms": 2000,
    }


TOPIC_METERS = (
    "BytesInPerSec", "BytesOutPerSec", "ReplicationBytesInPerSec", "ReplicationBytesOutPerSec",
    "ReassignmentBytesInPerSec", "ReassignmentBytesOutPerSec",
    "TotalProduceRequestsPerSec", "TotalFetchRequestsPerSec",
)
LATENCY_REQUESTS = ("Produce", "FetchConsumer", "FetchFollower")
QUANTILES = (("50th", "0.50"), ("75th", "0.75"), ("95th", "0.95"), ("99th", "0.99"),
             ("999th", "0.999"))


def _meter_rule(bean: str, metric: str, with_topic: bool) -> dict[str, object]:
    if with_topic:
        return {"pattern": f"kafka.server<type=BrokerTopicMetrics, name={bean}, topic=(.+)><>Count",
                "name": metric, "type": "COUNTER", "labels": {"topic": "$1"}}
    return {"pattern": f"kafka.server<type=BrokerTopicMetrics, name={bean}><>Count",
            "name": metric, "type": "COUNTER"}


def exporter_rules() -> list[dict[str, object]]:
    """JMX exporter rules yielding exactly the metric names of the sandbox metrics contract."""
    rules: list[dict[str, object]] = [
        _meter_rule("BytesInPerSec", "kafka_topic_bytes_in_total", True),
        _meter_rule("BytesOutPerSec", "kafka_topic_bytes_out_total", True),
        _meter_rule("TotalProduceRequestsPerSec", "kafka_topic_produce_requests_total", True),
        _meter_rule("TotalFetchRequestsPerSec", "kafka_topic_fetch_requests_total", True),
        _meter_rule("BytesInPerSec", "kafka_broker_bytes_in_total", False),
        _meter_rule("BytesOutPerSec", "kafka_broker_bytes_out_total", False),
        _meter_rule("ReplicationBytesInPerSec", "kafka_broker_replication_bytes_in_total", False),
        _meter_rule("ReplicationBytesOutPerSec", "kafka_broker_replication_bytes_out_total",
                    False),
        _meter_rule("ReassignmentBytesInPerSec", "kafka_broker_reassignment_bytes_in_total",
                    False),
        _meter_rule("ReassignmentBytesOutPerSec", "kafka_broker_reassignment_bytes_out_total",
                    False),
        # The KRaft metadata log is not a movable replica: left out.
        {"pattern": "kafka.log<type=Log, name=Size, topic=((?!__cluster_metadata).+), "
                    "partition=(\\d+)><>Value",
         "name": "kafka_log_size_bytes", "type": "GAUGE",
         "labels": {"topic": "$1", "partition": "$2"}},
        {"pattern": "kafka.server<type=BrokerTopicMetrics, name=RemoteLogSizeBytes, "
                    "topic=(.+)><>Value",
         "name": "kafka_topic_remote_log_size_bytes", "type": "GAUGE",
         "labels": {"topic": "$1"}},
        {"pattern": "kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value",
         "name": "kafka_under_replicated_partitions", "type": "GAUGE"},
    ]
    for attribute, quantile in QUANTILES:
        rules.append({
            "pattern": "kafka.network<type=RequestMetrics, name=TotalTimeMs, "
                       f"request=({'|'.join(LATENCY_REQUESTS)})><>{attribute}Percentile",
            "name": "kafka_request_total_time_ms", "type": "GAUGE",
            "labels": {"request": "$1", "quantile": quantile},
        })
        rules.append({
            "pattern": f"kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs><>"
                       f"{attribute}Percentile",
            "name": "kafka_log_flush_time_ms", "type": "GAUGE", "labels": {"quantile": quantile},
        })
    return rules


METRIC_NAMES = ("sandbox", "strimzi")
"""Exporter naming styles: the sandbox's own (topology.promql), or Strimzi's."""

BROKER_LABELS = {"sandbox": "broker_id", "strimzi": "broker"}
"""The label Prometheus puts the broker id in, per naming style."""


def strimzi_style_rules() -> list[dict[str, object]]:
    """JMX exporter rules naming series the way Strimzi's Kafka metrics rules do (the bean's
    domain, type and name, lowercased: kafka_server_brokertopicmetrics_bytesin_total), for the
    same beans as the sandbox's own rules."""
    per_sec = "kafka.server<type=BrokerTopicMetrics, name=(\\w+)PerSec"
    percentile = "><>(\\d+)thPercentile"
    return [
        {"pattern": f"{per_sec}, topic=(.+)><>Count",
         "name": "kafka_server_brokertopicmetrics_$1_total", "type": "COUNTER",
         "labels": {"topic": "$2"}},
        {"pattern": f"{per_sec}><>Count",
         "name": "kafka_server_brokertopicmetrics_$1_total", "type": "COUNTER"},
        {"pattern": "kafka.server<type=BrokerTopicMetrics, name=RemoteLogSizeBytes, "
                    "topic=(.+)><>Value",
         "name": "kafka_server_brokertopicmetrics_remotelogsizebytes", "type": "GAUGE",
         "labels": {"topic": "$1"}},
        {"pattern": "kafka.log<type=Log, name=Size, topic=((?!__cluster_metadata).+), "
                    "partition=(\\d+)><>Value",
         "name": "kafka_log_log_size", "type": "GAUGE",
         "labels": {"topic": "$1", "partition": "$2"}},
        {"pattern": "kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value",
         "name": "kafka_server_replicamanager_underreplicatedpartitions", "type": "GAUGE"},
        {"pattern": "kafka.network<type=RequestMetrics, name=TotalTimeMs, "
                    f"request=({'|'.join(LATENCY_REQUESTS)}){percentile}",
         "name": "kafka_network_requestmetrics_totaltimems", "type": "GAUGE",
         "labels": {"request": "$1", "quantile": "0.$2"}},
        {"pattern": f"kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs{percentile}",
         "name": "kafka_log_logflushstats_logflushrateandtimems", "type": "GAUGE",
         "labels": {"quantile": "0.$1"}},
    ]


def exporter_config(metric_names: str = "sandbox") -> dict[str, object]:
    """Whole exporter YAML document: only the beans the rules need are queried, and rule
    matches are cached (no pattern looks at values), which keeps 1 s scrapes cheap."""
    chosen = strimzi_style_rules() if metric_names == "strimzi" else exporter_rules()
    rules = [{**rule, "cache": True} for rule in chosen]
    return {
        "lowercaseOutputName": metric_names == "strimzi",
        "includeObjectNames": [
            *(f"kafka.server:type=BrokerTopicMetrics,name={meter},*" for meter in TOPIC_METERS),
            "kafka.server:type=BrokerTopicMetrics,name=RemoteLogSizeBytes,*",
            "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
            "kafka.log:type=Log,name=Size,*",
            *(f"kafka.network:type=RequestMetrics,name=TotalTimeMs,request={request}"
              for request in LATENCY_REQUESTS),
            "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs",
        ],
        "rules": rules,
    }


@dataclass(frozen=True)
class ScrapeTarget:
    """One broker's exporter as Prometheus sees it."""

    broker_id: int
    rack: str
    metrics_port: int
    host: str = LOOPBACK


def prometheus_config(targets: Sequence[ScrapeTarget],
                      broker_label: str = "broker_id") -> dict[str, object]:
    """prometheus.yml: every broker scraped each second, labelled with its id (in
    `broker_label`) and rack."""
    static = [
        {"targets": [f"{t.host}:{t.metrics_port}"],
         "labels": {broker_label: str(t.broker_id), "rack": t.rack}}
        for t in sorted(targets, key=lambda t: t.broker_id)
    ]
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL,
                   "scrape_timeout": SCRAPE_INTERVAL},
        "scrape_configs": [{"job_name": "kafka", "static_configs": static}],
    }


def capacities_yaml(link_mbps: int | None = None) -> str:
    """The sandbox's capacities file (what `snapshot --capacities` reads): every broker alike,
    as examples/sandbox-capacities.yaml; behind a shaped link, its rate each way."""
    net = "50MB/s" if link_mbps is None else f"{link_mbps / 8:.3f}".rstrip("0").rstrip(".") + "MB/s"
    return "".join(f"{line}\n" for line in (
        "# Capacities of this sandbox's brokers (written by `rebalance sandbox up`).",
        "default:",
        "  disk_bytes: 10GB",
        f"  net_in_bytes_per_sec: {net}",
        f"  net_out_bytes_per_sec: {net}",
    ))


def log4j2_properties() -> str:
    """Log4j2 config: INFO to stdout (redirected to the process's log file), chatty loggers WARN."""
    return "".join(f"{line}\n" for line in (
        "status = warn",
        "appender.out.type = Console",
        "appender.out.name = STDOUT",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.out.ref = STDOUT",
        "logger.kafka_request.name = kafka.request.logger",
        "logger.kafka_request.level = warn",
        "logger.state_change.name = state.change.logger",
        "logger.state_change.level = warn",
        "logger.clients.name = org.apache.kafka.clients",
        "logger.clients.level = warn",
    ))


def java_command(
    jar_dir: Path, heap: str, main_class: str, args: Sequence[str],
    extra_opts: Sequence[str] = (), archive: Path | None = None,
) -> list[str]:
    """A `java` command line with small heaps and a serial GC to spare a 2-core machine; with
    `archive`, the JVM maps its classes from that class-data archive (sandbox.classdata)."""
    shared = [f"-XX:SharedArchiveFile={archive}"] if archive is not None else []
    return [
        "java", f"-Xmx{heap}", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-XX:CICompilerCount=1",
        "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
        *shared, *extra_opts, "-cp", f"{jar_dir}/*", main_class, *args,
    ]
