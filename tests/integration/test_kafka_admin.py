"""KafkaClusterAdmin against the real sandbox: every KafkaAdmin method, read back independently.

Configs are read back with a raw confluent-kafka client, sizes from the brokers' log files,
and reassignments are watched until they finish (or are cancelled while throttled).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.core.ports import PartitionInfo
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.kafka_topics import (
    create_topic,
    disk_size,
    free_port,
    produce,
    raw_config,
    wait_for,
    wait_in_sync,
)
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition

pytestmark = pytest.mark.integration

BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def admin(sandbox: SandboxInfo) -> Iterator[KafkaClusterAdmin]:
    client = KafkaClusterAdmin(sandbox.bootstrap)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture()
def ids(sandbox: SandboxInfo) -> list[int]:
    return sorted(b.id for b in sandbox.brokers)[:4]


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _partition(admin: KafkaClusterAdmin, topic: str, index: int = 0) -> PartitionInfo:
    return next(p for p in admin.partitions([topic]) if p.partition == index)


def test_brokers_have_the_sandbox_racks_and_ports(admin: KafkaClusterAdmin,
                                                 sandbox: SandboxInfo) -> None:
    found = {b.id: b for b in admin.brokers()}
    for broker in sandbox.brokers:
        assert found[broker.id].rack == broker.rack
        assert found[broker.id].port == broker.port


def test_partitions_and_log_dir_sizes_match_the_brokers(
    admin: KafkaClusterAdmin, sandbox: SandboxInfo, ids: list[int]
) -> None:
    topic = _topic("adm")
    assignment = [[ids[0], ids[1], ids[2]], [ids[3], ids[0], ids[1]]]
    create_topic(sandbox.bootstrap, topic, assignment)
    produce(sandbox.bootstrap, topic, {0: 1500, 1: 400})
    wait_in_sync(sandbox.bootstrap, topic, 2)
    parts = admin.partitions([topic])
    assert [(p.partition, list(p.replicas)) for p in parts] == list(enumerate(assignment))
    assert all(set(p.isr) == set(p.replicas) and p.leader == p.replicas[0] for p in parts)

    sizes = admin.log_dir_sizes(ids)
    ours = {k: v for k, v in sizes.items() if k[0].topic == topic}
    expected = {(TopicPartition(topic, i), b): disk_size(sandbox, b, topic, i)
                for i, replicas in enumerate(assignment) for b in replicas}
    assert ours == expected
    assert min(expected.values()) > 0


def test_unknown_topic_is_a_cluster_error(admin: KafkaClusterAdmin) -> None:
    with pytest.raises(ClusterError, match="does not exist"):
        admin.partitions([_topic("absent")])


def test_broker_config_set_read_back_and_delete(
    admin: KafkaClusterAdmin, sandbox: SandboxInfo, ids: list[int]
) -> None:
    broker = ids[1]
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    assert admin.broker_configs([broker], BROKER_THROTTLES) == {
        broker: dict.fromkeys(BROKER_THROTTLES)}
    try:
        admin.alter_broker_configs({broker: {BROKER_THROTTLES[0]: "12345678"}})
        assert admin.broker_configs([broker, ids[2]], BROKER_THROTTLES) == {
            broker: {BROKER_THROTTLES[0]: "12345678", BROKER_THROTTLES[1]: None},
            ids[2]: dict.fromkeys(BROKER_THROTTLES)}
        wait_for("the raw read-back", lambda: raw_config(
            sandbox.bootstrap, resource, BROKER_THROTTLES[0]) == (
            "12345678", ConfigSource.DYNAMIC_BROKER_CONFIG.value), 30)
    finally:
        admin.alter_broker_configs({broker: {BROKER_THROTTLES[0]: None}})
    assert admin.broker_configs([broker], BROKER_THROTTLES)[broker][BROKER_THROTTLES[0]] is None
    wait_for("the raw delete", lambda: raw_config(
        sandbox.bootstrap, resource, BROKER_THROTTLES[0])[1]
        != ConfigSource.DYNAMIC_BROKER_CONFIG.value, 30)


def test_topic_config_set_read_back_and_delete(
    admin: KafkaClusterAdmin, sandbox: SandboxInfo, ids: list[int]
) -> None:
    topic = _topic("cfg")
    create_topic(sandbox.bootstrap, topic, [[ids[0], ids[1]]])
    names = ["retention.ms", "leader.replication.throttled.replicas", "cleanup.policy"]
    assert admin.topic_configs([topic], names) == {topic: dict.fromkeys(names)}
    admin.alter_topic_configs({topic: {"retention.ms": "3600000",
                                       names[1]: f"0:{ids[0]},0:{ids[1]}"}})
    assert admin.topic_configs([topic], names) == {topic: {
        "retention.ms": "3600000", names[1]: f"0:{ids[0]},0:{ids[1]}", "cleanup.policy": None}}
    resource = ConfigResource(ResourceType.TOPIC, topic)
    wait_for("the raw read-back", lambda: raw_config(
        sandbox.bootstrap, resource, "retention.ms") == (
        "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), 30)
    admin.alter_topic_configs({topic: {"retention.ms": None, names[1]: None}})
    assert admin.topic_configs([topic], names) == {topic: dict.fromkeys(names)}
    wait_for("the broker default to return", lambda: raw_config(
        sandbox.bootstrap, resource, "retention.ms")[0] == "604800000", 30)


def test_reassignment_finishes_then_preferred_leader_election(
    admin: KafkaClusterAdmin, sandbox: SandboxInfo, ids: list[int]
) -> None:
    topic = _topic("move")
    create_topic(sandbox.bootstrap, topic, [[ids[0], ids[1]]])
    produce(sandbox.bootstrap, topic, {0: 500})
    tp = TopicPartition(topic, 0)

    admin.alter_partition_reassignments({tp: [ids[2], ids[3]]})
    wait_for("the move to finish", lambda: tp not in admin.list_partition_reassignments()
             and _partition(admin, topic).replicas == (ids[2], ids[3]), 120)
    sizes = admin.log_dir_sizes(ids)
    assert sizes[(tp, ids[2])] == sizes[(tp, ids[3])] == disk_size(sandbox, ids[2], topic, 0) > 0
    # The old replicas are deleted asynchronously after the move.
    wait_for("the old replica's removal", lambda: (tp, ids[0]) not in admin.log_dir_sizes(ids))

    # Reorder only: no data moves, leadership stays until a preferred election.
    admin.alter_partition_reassignments({tp: [ids[3], ids[2]]})
    wait_for("the reorder", lambda: _partition(admin, topic).replicas == (ids[3], ids[2]))
    assert _partition(admin, topic).leader == ids[2]
    admin.elect_preferred_leaders([tp])
    wait_for("the new preferred leader", lambda: _partition(admin, topic).leader == ids[3])
    admin.elect_preferred_leaders([tp])  # already preferred: not an error


def test_throttled_reassignment_is_listed_in_flight_then_cancelled(
    admin: KafkaClusterAdmin, sandbox: SandboxInfo, ids: list[int]
) -> None:
    topic = _topic("slow")
    create_topic(sandbox.bootstrap, topic, [[ids[0], ids[1]]])
    produce(sandbox.bootstrap, topic, {0: 3000})
    tp = TopicPartition(topic, 0)
    throttle = dict.fromkeys(BROKER_THROTTLES, "10000")
    try:
        admin.alter_topic_configs({topic: {
            "leader.replication.throttled.replicas": f"0:{ids[0]},0:{ids[1]}",
            "follower.replication.throttled.replicas": f"0:{ids[2]}"}})
        admin.alter_broker_configs(dict.fromkeys(ids, throttle))
        admin.alter_partition_reassignments({tp: [ids[2], ids[1]]})
        in_flight = admin.list_partition_reassignments()
        assert tp in in_flight
        assert in_flight[tp].adding == (ids[2],)
        assert in_flight[tp].removing == (ids[0],)
        assert set(in_flight[tp].replicas) == {ids[0], ids[1], ids[2]}

        admin.alter_partition_reassignments({tp: None})
        wait_for("the cancel", lambda: tp not in admin.list_partition_reassignments())
        # The original replica set is restored (brokers' metadata follows the controller a
        # little later); Kafka may reorder it, so compare as sets.
        wait_for("the original replicas back in metadata",
                 lambda: set(_partition(admin, topic).replicas) == {ids[0], ids[1]})
        admin.alter_partition_reassignments({tp: None})  # nothing in flight: a no-op
    finally:
        admin.alter_broker_configs({b: dict.fromkeys(BROKER_THROTTLES) for b in ids})
        admin.alter_topic_configs({topic: {"leader.replication.throttled.replicas": None,
                                           "follower.replication.throttled.replicas": None}})
    assert all(v is None for c in admin.broker_configs(ids, BROKER_THROTTLES).values()
               for v in c.values())


def test_invalid_reassignment_is_a_cluster_error(
    admin: KafkaClusterAdmin, sandbox: SandboxInfo, ids: list[int]
) -> None:
    topic = _topic("bad")
    create_topic(sandbox.bootstrap, topic, [[ids[0]]])
    with pytest.raises(ClusterError, match=f"{topic}-0"):
        admin.alter_partition_reassignments({TopicPartition(topic, 0): [ids[0], ids[0]]})


@pytest.mark.parametrize("call", ["brokers", "list_partition_reassignments"])
def test_unreachable_bootstrap_fails_within_the_timeout(call: str) -> None:
    address = f"127.0.0.1:{free_port()}"
    client = KafkaClusterAdmin(address, timeout_s=2)
    started = time.monotonic()
    with pytest.raises(ClusterError, match=f"cannot reach Kafka at {address}"):
        getattr(client, call)()
    assert time.monotonic() - started < 10
    client.close()
